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

namespace {

// Checks and the parts shared by t and F: the design's basis, the nuisance space Z = M (I - C^+ C) of the contrast
// rows C (q x p, independent) and its residual-forming matrix.
TContrastModel contrast_model(const Eigen::MatrixXd& design, const Eigen::MatrixXd& rows, const std::string& what) {
  const Eigen::Index n = design.rows(), p = design.cols();
  if (p == 0 || n < p + 1) {
    throw std::invalid_argument(
        fmt::format("{}: {} rows and {} columns: a test needs more subjects than design columns", what, n, p));
  }
  if (!design.allFinite()) throw std::invalid_argument(fmt::format("{}: the design has non-finite entries", what));
  if (rows.cols() != p) {
    throw std::invalid_argument(
        fmt::format("{}: a contrast has {} weights but the design has {} columns", what, rows.cols(), p));
  }
  if (rows.rows() == 0 || !rows.allFinite())
    throw std::invalid_argument(fmt::format("{}: a contrast is not finite", what));
  for (Eigen::Index r = 0; r < rows.rows(); ++r) {
    if (rows.row(r).norm() == 0.0) throw std::invalid_argument(fmt::format("{}: a contrast is zero", what));
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
  const Eigen::JacobiSVD<Eigen::MatrixXd> csvd(rows);
  const auto& cs = csvd.singularValues();
  if (cs[cs.size() - 1] <= 1e-10 * cs[0] || rows.rows() > p) {
    throw std::invalid_argument(fmt::format("{}: the F test's contrasts are not linearly independent", what));
  }
  TContrastModel m;
  m.n = static_cast<int>(n);
  m.p = static_cast<int>(p);
  m.dof = static_cast<double>(n - p);
  int rank = 0;
  m.basis = column_basis(design, 1e-10, &rank);
  // Nuisance: Z = M (I - C^+ C), C^+ = C' (C C')^-1.
  const Eigen::MatrixXd c_pinv = rows.transpose() * (rows * rows.transpose()).inverse();
  const Eigen::MatrixXd z = design * (Eigen::MatrixXd::Identity(p, p) - c_pinv * rows);
  const Eigen::MatrixXd qz = column_basis(z, 1e-10, &m.nuisance_rank);
  m.residual_forming = Eigen::MatrixXd::Identity(n, n) - qz * qz.transpose();
  return m;
}

}  // namespace

TContrastModel make_t_contrast_model(const Eigen::MatrixXd& design, const Eigen::RowVectorXd& contrast,
                                     const std::string& what) {
  if (contrast.size() != design.cols()) {
    throw std::invalid_argument(fmt::format("{}: a contrast has {} weights but the design has {} columns", what,
                                            contrast.size(), design.cols()));
  }
  TContrastModel m = contrast_model(design, contrast, what);
  const Eigen::MatrixXd xtx_inv = (design.transpose() * design).inverse();
  const Eigen::VectorXd c = contrast.transpose();
  m.variance_factor = c.dot(xtx_inv * c);
  m.a = design * (xtx_inv * c);  // pinv(M)' c
  return m;
}

TContrastModel make_f_contrast_model(const Eigen::MatrixXd& design, const Eigen::MatrixXd& rows,
                                     const std::string& what) {
  TContrastModel m = contrast_model(design, rows, what);
  const Eigen::MatrixXd xtx_inv = (design.transpose() * design).inverse();
  m.q = static_cast<int>(rows.rows());
  const Eigen::MatrixXd a = design * xtx_inv * rows.transpose();  // n x q: C b = A' y
  const Eigen::MatrixXd gamma = m.basis.transpose() * a;          // p x q: A = U Gamma
  const Eigen::MatrixXd w = (rows * xtx_inv * rows.transpose()).inverse();
  m.quadratic = gamma * w * gamma.transpose() * (m.dof / static_cast<double>(m.q));
  m.a = a.col(0);  // unused for F
  return m;
}

}  // namespace rtf
