// Freedman-Lane partition and the vectors of one t contrast's permutation test (t_contrast_model.hpp).
#include "core/permutation/t_contrast_model.hpp"

#include <fmt/format.h>

#include <Eigen/LU>
#include <Eigen/SVD>
#include <stdexcept>

namespace rtf {

namespace {

// An orthonormal basis of the column space of `m` (singular values above `relative` of the largest).
Eigen::MatrixXd column_basis(const Eigen::MatrixXd& m, double relative, int* rank) {
  *rank = 0;
  if (m.cols() == 0) return Eigen::MatrixXd(m.rows(), 0);
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(m, Eigen::ComputeThinU);
  const auto& s = svd.singularValues();
  const double top = s.size() > 0 ? s[0] : 0.0;
  for (Eigen::Index i = 0; i < s.size(); ++i) {
    if (s[i] > relative * top && s[i] > 0.0) ++*rank;
  }
  return svd.matrixU().leftCols(*rank);
}

}  // namespace

TContrastModel make_t_contrast_model(const Eigen::MatrixXd& design, const Eigen::RowVectorXd& contrast,
                                     const std::string& what) {
  const Eigen::Index n = design.rows(), p = design.cols();
  if (p == 0 || n < p + 1) {
    throw std::invalid_argument(
        fmt::format("{}: {} rows and {} columns: a t test needs more subjects than design columns", what, n, p));
  }
  if (!design.allFinite()) throw std::invalid_argument(fmt::format("{}: the design has non-finite entries", what));
  if (contrast.size() != p) {
    throw std::invalid_argument(
        fmt::format("{}: a contrast has {} weights but the design has {} columns", what, contrast.size(), p));
  }
  if (!contrast.allFinite() || contrast.norm() == 0.0) {
    throw std::invalid_argument(fmt::format("{}: a contrast is zero or not finite", what));
  }
  for (Eigen::Index j = 0; j < p; ++j) {
    if (design.col(j).norm() == 0.0) {
      throw std::invalid_argument(
          fmt::format("{}: design column {} is all zeros (rank-deficient design)", what, j + 1));
    }
  }
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(design);
  const auto& s = svd.singularValues();
  if (s[p - 1] <= 1e-10 * s[0]) {
    throw std::invalid_argument(fmt::format(
        "{}: the design is rank-deficient (singular values {:.3g} .. {:.3g}): a column is a combination of others",
        what, s[0], s[p - 1]));
  }
  TContrastModel m;
  m.n = static_cast<int>(n);
  m.p = static_cast<int>(p);
  m.dof = static_cast<double>(n - p);
  const Eigen::MatrixXd xtx_inv = (design.transpose() * design).inverse();
  const Eigen::VectorXd c = contrast.transpose();
  m.variance_factor = c.dot(xtx_inv * c);
  m.a = design * (xtx_inv * c);  // pinv(M)' c
  int rank = 0;
  m.basis = column_basis(design, 1e-10, &rank);
  // Nuisance: Z = M (I - c c^+), c^+ = c' / |c|^2.
  const Eigen::MatrixXd project_out = Eigen::MatrixXd::Identity(p, p) - c * c.transpose() / c.squaredNorm();
  const Eigen::MatrixXd z = design * project_out;
  const Eigen::MatrixXd qz = column_basis(z, 1e-10, &m.nuisance_rank);
  m.residual_forming = Eigen::MatrixXd::Identity(n, n) - qz * qz.transpose();
  return m;
}

}  // namespace rtf
