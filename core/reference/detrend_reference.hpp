// Double-precision reference for detrending, written for clarity: per voxel, the least-squares
// residual r = y - X (X^T X)^-1 X^T y on the raw (not orthonormalised) design X, plus mean(y) unless
// `remove_mean`. Independent of the device path's orthonormal basis.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <span>
#include <vector>

namespace rtf::reference {

// `data`: nt = X.rows() volumes of `num_voxels` voxels, volume-major. Returns the same layout.
std::vector<double> detrend(std::span<const float> data, int64_t num_voxels, const Eigen::MatrixXd& design,
                            bool remove_mean);

}  // namespace rtf::reference
