// SampleSpace: the dual fold's eigendecomposition in double (Eigen's self-adjoint solver); the primal fold copies rows.
#include "core/decoding/sample_space.hpp"

#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <stdexcept>
#include <vector>

namespace rtf {

namespace {

constexpr double kRelativeEigenvalueFloor = 1e-12;

Eigen::MatrixXd rows_of(const Eigen::MatrixXd& m, std::span<const int> rows) {
  Eigen::MatrixXd out(static_cast<Eigen::Index>(rows.size()), m.cols());
  for (size_t i = 0; i < rows.size(); ++i) out.row(static_cast<Eigen::Index>(i)) = m.row(rows[i]);
  return out;
}

Eigen::MatrixXd block_of(const Eigen::MatrixXd& m, std::span<const int> rows, std::span<const int> cols) {
  Eigen::MatrixXd out(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(cols.size()));
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < cols.size(); ++j) {
      out(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = m(rows[i], cols[j]);
    }
  }
  return out;
}

}  // namespace

SampleSpace SampleSpace::primal(Eigen::MatrixXd features) {
  return {std::move(features), false};
}

SampleSpace SampleSpace::dual(Eigen::MatrixXd gram) {
  if (gram.rows() != gram.cols()) {
    throw std::invalid_argument(fmt::format("SampleSpace: a Gram matrix of {} x {}", gram.rows(), gram.cols()));
  }
  return {std::move(gram), true};
}

SampleSpace::Fold SampleSpace::fold(std::span<const int> train, std::span<const int> test) const {
  if (train.empty()) throw std::invalid_argument("SampleSpace: an empty training set");
  for (const std::span<const int> set : {train, test}) {
    for (const int i : set) {
      if (i < 0 || i >= data_.rows()) throw std::invalid_argument(fmt::format("SampleSpace: no sample {}", i));
    }
  }
  Fold f;
  if (!dual_) {
    f.train = rows_of(data_, train);
    f.test = rows_of(data_, test);
    return f;
  }
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(block_of(data_, train, train));
  if (eigen.info() != Eigen::Success) throw std::runtime_error("SampleSpace: the eigendecomposition failed");
  const Eigen::VectorXd& values = eigen.eigenvalues();  // ascending
  const double floor = kRelativeEigenvalueFloor * std::max(values.maxCoeff(), 0.0);
  std::vector<Eigen::Index> kept;
  for (Eigen::Index k = values.size() - 1; k >= 0; --k) {
    if (values[k] > floor && values[k] > 0.0) kept.push_back(k);
  }
  const auto r = static_cast<Eigen::Index>(kept.size());
  const auto n = static_cast<Eigen::Index>(train.size());
  Eigen::MatrixXd us(n, r);
  f.to_samples.resize(n, r);
  for (Eigen::Index c = 0; c < r; ++c) {
    const double s = std::sqrt(values[kept[static_cast<size_t>(c)]]);
    const auto u = eigen.eigenvectors().col(kept[static_cast<size_t>(c)]);
    us.col(c) = u * s;
    f.to_samples.col(c) = u / s;
  }
  f.train = std::move(us);
  f.test = block_of(data_, test, train) * f.to_samples;
  return f;
}

}  // namespace rtf
