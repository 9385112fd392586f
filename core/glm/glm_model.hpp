// GlmModel: the host side of one GLM fit. From the design rows of the volumes in the fit (already whitened when AR(1)
// prewhitening is on) and the contrasts it computes pinv(X'X), the rank and residual degrees of freedom, each
// t contrast's variance factor c' pinv(X'X) c and each F contrast's middle matrix (C pinv(X'X) C')^-1, and whether
// each contrast is estimable. Small (columns x columns), double precision, recomputed per TR by the live GLMs.
// docs/algorithms/glm.md.
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

namespace rtf {

struct GlmContrast {
  std::string name;
  Eigen::MatrixXd weights;  // 1 x columns: t contrast; q x columns: F contrast
  bool is_f() const { return weights.rows() > 1; }
};

struct GlmModel {
  Eigen::MatrixXd pinv_xtx;  // columns x columns
  Eigen::Index rank = 0;
  double dof = 0.0;  // rows - rank
  // Per t contrast (in the order given, F contrasts skipped): c' pinv c, and estimability.
  std::vector<double> t_variance;
  std::vector<bool> t_estimable;
  // Per F contrast: the rows C, pinv(C pinv(X'X) C') (the inverse when the rows are independent) and its rank q,
  // the numerator's degrees of freedom: F = (C b)' middle (C b) / (q sigma2).
  std::vector<Eigen::MatrixXd> f_rows;
  std::vector<Eigen::MatrixXd> f_middle;
  std::vector<double> f_dof;
  std::vector<bool> f_estimable;
};

// Throws std::invalid_argument when a contrast's width differs from the design's columns or has non-finite weights.
// A contrast that is not estimable (c not in the row space of X: |c - c V V'| > 1e-4 |c|, V the eigenvectors of X'X
// with non-negligible eigenvalues) gets variance 0
// (the device then writes NaN statistics) rather than an error: early in a run the design is rank-deficient.
GlmModel make_glm_model(const Eigen::MatrixXd& rows, const std::vector<GlmContrast>& contrasts);
// The same from X'X and the number of rows (the cumulative GLM accumulates X'X row by row). With `active`, only
// those columns are fitted: pinv is taken over the active block and is zero elsewhere, so the estimates of inactive
// columns are 0 and contrasts weighing them are not estimable.
GlmModel make_glm_model_from_xtx(const Eigen::MatrixXd& xtx, Eigen::Index rows,
                                 const std::vector<GlmContrast>& contrasts, const std::vector<bool>* active = nullptr);

// The Moore-Penrose pseudo-inverse of a symmetric positive semi-definite matrix (eigenvalues below
// max(eigenvalue) * columns * 1e-12 count as 0), and its rank.
Eigen::MatrixXd symmetric_pinv(const Eigen::MatrixXd& a, Eigen::Index* rank = nullptr);

}  // namespace rtf
