// Double-precision references for the decoders' device kernels, written for clarity: the per-run features (the
// least-squares detrending residuals of reference::detrend, z-scored with the 1/T standard deviation), the Gram matrix
// X X^T and the back-projection X^T beta.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <span>
#include <vector>

namespace rtf::reference {

// One run's sample rows: `series` T x P (volume-major, raw values), `design` its raw detrending design (T x columns,
// constant first; empty: no detrending), `rows[t]` the sample row of volume t or -1, `x` (n x P, row-major) updated
// in those rows. A feature constant over the run's raw values gets 0.
void decoding_features(std::span<const float> series, int64_t p, const Eigen::MatrixXd& design,
                       std::span<const int> rows, bool zscore, std::vector<double>& x);

// x: n x p row-major. Returns X X^T.
Eigen::MatrixXd gram(std::span<const float> x, int64_t n, int64_t p);

// x: n x p row-major, beta n x M. Returns X^T beta (p x M).
Eigen::MatrixXd back_projection(std::span<const float> x, int64_t n, int64_t p, const Eigen::MatrixXd& beta);

// The live decoder's decision values for volume t of a run, from the run's volumes 0..t (`volumes`: t + 1 volumes
// of `volume_size` voxels, volume-major): per feature, the least-squares fit of a line (detrend 1) or the mean
// (detrend 0) to its t + 1 values by an explicit solve, the residual of the last value, divided by the residuals' SD
// with 1/(t + 1) (scale 1), or (residual - shift) / scale (scale 2), or as it is (scale 0); detrend -1 takes the raw
// value. Then coef^T z + intercept (M values).
std::vector<double> live_decision(std::span<const float> volumes, int64_t volume_size, std::span<const int> voxels,
                                  const Eigen::MatrixXd& coef, const Eigen::VectorXd& intercept, int detrend, int scale,
                                  std::span<const double> shift = {}, std::span<const double> scale_by = {});

}  // namespace rtf::reference
