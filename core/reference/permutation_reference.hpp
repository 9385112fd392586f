// Double-precision reference of the voxel-wise permutation test (core/permutation/voxel_permutation.hpp), by the
// definition rather than the shortcut: for each rearrangement the data y* = P (I - H_Z) y + H_Z y (Freedman-Lane) is
// built and the full model refitted by least squares (QR), t = c'b / sqrt(s^2 c'(M'M)^-1 c). Slow; for tests.
#pragma once

#include <Eigen/Core>
#include <vector>

#include "core/permutation/permutation_set.hpp"
#include "core/permutation/voxel_permutation.hpp"

namespace rtf::reference {

// `data`: N x V (voxel fastest per subject), the raw data (not residuals). Same outputs as the device test.
VoxelPermutationResult voxel_permutation_test(const Eigen::MatrixXd& design, const Eigen::RowVectorXd& contrast,
                                              const PermutationSet& set, const std::vector<float>& data, size_t voxels);

// The same for the F test of the contrast rows C (q x p): F = (Cb)' [C (M'M)^-1 C']^-1 (Cb) / q / s^2.
VoxelPermutationResult voxel_permutation_test_f(const Eigen::MatrixXd& design, const Eigen::MatrixXd& rows,
                                                const PermutationSet& set, const std::vector<float>& data,
                                                size_t voxels);

}  // namespace rtf::reference
