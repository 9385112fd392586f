// Double-precision reference for the first-level GLM with AR(P) noise (docs/algorithms/glm_ar.md), written for
// clarity: Cochrane-Orcutt iterations as statsmodels' GLSAR(y, X, rho=P).iterative_fit(maxiter=M) with its early
// stop disabled (whitening drops the first P volumes; Yule-Walker "adjusted", demeaned, on the unwhitened residuals
// of all n volumes), the P AR maps optionally smoothed by normalised convolution inside the mask between iterations;
// and the pieces of the first-level permutation scheme: OLS null residuals, the truncated (invertible) whitening
// filter and its inverse, the re-colouring. The device AR GLM and resampling kernels are tested against it.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <limits>
#include <vector>

namespace rtf::reference {

// Yule-Walker AR(order) coefficients of e (demeaned; c0 = sum e^2 / n, ck = sum e_t e_{t+k} / (n-k)); all zeros
// when c0 == 0. statsmodels' yule_walker(e, order, method="adjusted", demean=True).
Eigen::VectorXd yule_walker(const Eigen::VectorXd& e, int order);

// The GLS whitening of the rows of m (time along rows) with the first P = rho.size() rows dropped, as statsmodels'
// GLSAR.whiten: row t - P of the result is m_t - sum_{k=1..P} rho_k m_{t-k}, t = P .. n-1.
Eigen::MatrixXd ar_whiten(const Eigen::MatrixXd& m, const Eigen::VectorXd& rho);

// w_t = r_t - sum_{k=1..min(t,P)} rho_k r_{t-k} for every t (truncated at the start, invertible)
Eigen::VectorXd ar_whiten_truncated(const Eigen::VectorXd& r, const Eigen::VectorXd& rho);

// y_t = w_t + sum_{k=1..min(t,P)} rho_k y_{t-k}: the inverse of ar_whiten_truncated
Eigen::VectorXd ar_recolour(const Eigen::VectorXd& w, const Eigen::VectorXd& rho);

struct ArVoxelFit {
  Eigen::VectorXd beta;
  double sigma2 = std::numeric_limits<double>::quiet_NaN();
  double dof = 0;  // n - P - rank of the whitened design
  // Per contrast: t (1 row) or F (>1 rows); NaN when not estimable, dof <= 0 or sigma2 == 0.
  std::vector<double> stat;
};

// One GLS fit of y on x whitened with rho (dropping the first rho.size() rows): beta = pinv(Xw) yw,
// sigma2 = |yw - Xw beta|^2/(n-P-rank), t = c'b/sqrt(sigma2 c' pinv(Xw'Xw) c),
// F = (Cb)' pinv(C pinv(Xw'Xw) C') (Cb) / (q sigma2), q = rank of C pinv(Xw'Xw) C'. A contrast is estimable when
// its rows lie in the row space of x (and of Xw; tolerance 1e-4 relative, as rtf::make_glm_model); pseudo-inverses
// by rtf::symmetric_pinv (eigenvalues below max * columns * 1e-12 are zero). sigma2 is NaN when dof <= 0.
ArVoxelFit fit_whitened(const Eigen::VectorXd& y, const Eigen::MatrixXd& x, const Eigen::VectorXd& rho,
                        const std::vector<Eigen::MatrixXd>& contrasts);

struct ArGlmReference {
  Eigen::MatrixXd rho;     // P x V: the AR coefficients used in the last fit (rho^(M-1), after smoothing); 0 outside
                           // the mask
  Eigen::MatrixXd beta;    // columns x V, NaN outside the mask
  Eigen::VectorXd sigma2;  // V, NaN outside the mask
  Eigen::MatrixXd stat;    // contrasts x V, NaN outside the mask
  double dof = 0;          // n - P - rank (the rank of x)
};

// data: n x V (V = nx*ny*nz full grid, x fastest), mask: V bytes (nonzero inside). ar_taps: per-axis Gaussian taps
// as the device smoother uses them (rtf::GaussianSmoother::taps(), core/filters/gaussian_smoothing.hpp); nullptr: no
// smoothing. Smoothing: each rho_k map is rounded to float, smoothed with reference::smooth_volume(map, dims, taps,
// mask), and the result rounded to float again (the device keeps rho in float). Voxels inside the mask whose series
// is constant get rho 0 before smoothing.
// Iterations: rho^(0) = 0; for i = 1..M: fit_whitened with rho^(i-1) (the first P rows are dropped even while rho
// is 0, as GLSAR does); if i < M: e = y - x beta over all n rows, rho^(i) = yule_walker(e, P), then the smoothing.
// The last fit gives beta, sigma2 and stat.
ArGlmReference fit_ar_glm(const Eigen::MatrixXd& data, std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask,
                          const Eigen::MatrixXd& x, const std::vector<Eigen::MatrixXd>& contrasts, int order,
                          int iterations, const std::array<std::vector<double>, 3>* ar_taps);

// The null residuals of the permutation scheme: r = y - Z pinv(Z) y per voxel with Z = the columns of x listed in
// `nuisance` (all n rows, OLS, no whitening); r = y when nuisance is empty.
Eigen::MatrixXd null_residuals(const Eigen::MatrixXd& data, const Eigen::MatrixXd& x, const std::vector<int>& nuisance);

}  // namespace rtf::reference
