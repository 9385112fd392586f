// Legendre and DCT detrending bases and their orthonormalisation (double precision).
#include "core/temporal/detrend_basis.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace rtf {

Eigen::MatrixXd legendre_basis(int64_t n, int order) {
  if (n < 1) throw std::invalid_argument(fmt::format("detrend: {} volumes", n));
  if (order < 0 || order > kMaxDetrendPolyOrder) {
    throw std::invalid_argument(fmt::format("detrend: polynomial order {} outside 0..{}", order, kMaxDetrendPolyOrder));
  }
  Eigen::MatrixXd p(n, order + 1);
  for (int64_t t = 0; t < n; ++t) {
    const double x = n == 1 ? 0.0 : 2.0 * static_cast<double>(t) / static_cast<double>(n - 1) - 1.0;
    p(t, 0) = 1.0;
    if (order >= 1) p(t, 1) = x;
    for (int k = 1; k < order; ++k) {  // (k + 1) P_{k+1} = (2k + 1) x P_k - k P_{k-1}
      p(t, k + 1) = ((2.0 * k + 1.0) * x * p(t, k) - k * p(t, k - 1)) / (k + 1.0);
    }
  }
  return p;
}

int64_t dct_count(int64_t n, double tr_s, double cutoff_s) {
  if (!(cutoff_s > 0.0) || !std::isfinite(cutoff_s)) {
    throw std::invalid_argument(fmt::format("detrend: high-pass cutoff must be positive, got {} s", cutoff_s));
  }
  if (!(tr_s > 0.0) || !std::isfinite(tr_s)) {
    throw std::invalid_argument(fmt::format("detrend: the DCT high-pass needs TR > 0, got {} s", tr_s));
  }
  if (n < 1) throw std::invalid_argument(fmt::format("detrend: {} volumes", n));
  const double k = std::floor(2.0 * static_cast<double>(n) * tr_s / cutoff_s + 1.0);
  if (k > static_cast<double>(n)) {
    throw std::invalid_argument(
        fmt::format("detrend: cutoff {} s needs {} DCT functions, more than the {} volumes", cutoff_s, k, n));
  }
  return static_cast<int64_t>(k);
}

Eigen::MatrixXd dct_basis(int64_t n, double tr_s, double cutoff_s) {
  const int64_t count = dct_count(n, tr_s, cutoff_s);
  Eigen::MatrixXd c(n, count);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t k = 0; k < count; ++k) {
      c(t, k) = std::cos(std::numbers::pi * static_cast<double>(k) * (2.0 * static_cast<double>(t) + 1.0) /
                         (2.0 * static_cast<double>(n)));
    }
  }
  return c;
}

Eigen::MatrixXd detrend_design(int64_t n, double tr_s, const DetrendSpec& spec) {
  if (!spec.poly_order && !spec.highpass_cutoff_s) {
    throw std::invalid_argument("detrend: give a polynomial order, a high-pass cutoff, or both");
  }
  if (n < 1) throw std::invalid_argument(fmt::format("detrend: {} volumes", n));
  const Eigen::MatrixXd poly = legendre_basis(n, spec.poly_order.value_or(0));
  const Eigen::MatrixXd dct =
      spec.highpass_cutoff_s ? dct_basis(n, tr_s, *spec.highpass_cutoff_s) : Eigen::MatrixXd::Ones(n, 1);
  Eigen::MatrixXd design(n, poly.cols() + dct.cols() - 1);
  design << poly, dct.rightCols(dct.cols() - 1);
  if (design.cols() >= n) {
    throw std::invalid_argument(
        fmt::format("detrend: {} volumes are too few for a basis of {} functions", n, design.cols()));
  }
  return design;
}

Eigen::MatrixXd orthonormal_basis(const Eigen::MatrixXd& design) {
  Eigen::MatrixXd q = design;
  for (Eigen::Index j = 0; j < q.cols(); ++j) {
    const double original = q.col(j).norm();
    for (int pass = 0; pass < 2; ++pass) {
      for (Eigen::Index i = 0; i < j; ++i) q.col(j) -= q.col(i).dot(q.col(j)) * q.col(i);
    }
    const double norm = q.col(j).norm();
    if (!(norm > 1e-9 * original)) {
      throw std::invalid_argument(
          fmt::format("detrend: basis function {} is linearly dependent on the previous ones (too few volumes?)", j));
    }
    q.col(j) /= norm;
  }
  return q;
}

}  // namespace rtf
