// Slow drift regressors for a first-level design: SPM's discrete cosine set (spm_dctmtx, the columns its
// high-pass filter removes) or Legendre polynomials. The constant is not included; the design adds it.
// Both reuse the detrending bases of core/temporal/detrend_basis. See docs/algorithms/design.md.
#pragma once

#include <Eigen/Core>
#include <cstdint>

namespace rtf {

// n x (K - 1) with K = floor(2 n TR / cutoff + 1) (spm_filter's count, the constant included): column k - 1 is
// spm_dctmtx's column k, sqrt(2 / n) cos(pi k (2t + 1) / (2n)), t = 0..n-1, k = 1..K-1. Periods longer than
// about `cutoff_s` seconds are spanned. May have no columns (cutoff longer than twice the run). Throws
// std::invalid_argument for TR <= 0, cutoff <= 0 or K > n.
Eigen::MatrixXd spm_dct_drift(int64_t n, double tr_s, double cutoff_s);

// n x order: Legendre polynomials P_1..P_order of x_t = 2t/(n-1) - 1 (time mapped to [-1, 1]), 0 <= order <= 10.
Eigen::MatrixXd legendre_drift(int64_t n, int order);

}  // namespace rtf
