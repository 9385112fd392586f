// Temporal detrending bases: Legendre polynomials over the run mapped to [-1, 1] and SPM's
// discrete cosine (DCT) high-pass set, combined into one design (constant first) and
// orthonormalised in double precision. See docs/algorithms/detrending.md.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <optional>

namespace rtf {

constexpr int kMaxDetrendPolyOrder = 10;

struct DetrendSpec {
  std::optional<int> poly_order;            // Legendre polynomials of order 0..N (0 <= N <= 10)
  std::optional<double> highpass_cutoff_s;  // DCT high-pass: remove periods longer than this (seconds)
  bool remove_mean = false;                 // also remove each voxel's mean (default: keep it)
};

// n x (order + 1): column k is P_k(x_t), x_t = 2t/(n-1) - 1 (x = 0 when n == 1).
Eigen::MatrixXd legendre_basis(int64_t n, int order);

// SPM's count K = floor(2 n TR / cutoff + 1) of DCT functions, the constant included.
int64_t dct_count(int64_t n, double tr_s, double cutoff_s);

// n x K: column 0 is 1, column k is cos(pi k (2t + 1) / (2n)), k = 1..K-1 (SPM's spm_dctmtx up to scale).
Eigen::MatrixXd dct_basis(int64_t n, double tr_s, double cutoff_s);

// The raw (not orthonormalised) design for `spec`: a constant, Legendre orders 1..N, then DCT
// columns 1..K-1. Throws std::invalid_argument for N outside 0..10, cutoff <= 0, TR <= 0 with a
// cutoff, neither option given, or a design with as many columns as volumes (or more).
Eigen::MatrixXd detrend_design(int64_t n, double tr_s, const DetrendSpec& spec);

// Orthonormal columns spanning `design`'s columns, in order (modified Gram-Schmidt, twice), so
// column 0 is the normalised constant when design column 0 is constant. Throws
// std::invalid_argument when the columns are (numerically) linearly dependent.
Eigen::MatrixXd orthonormal_basis(const Eigen::MatrixXd& design);

}  // namespace rtf
