// Helpers shared by the registration tests: grids of any voxel size and orientation centred on a point, rotations
// about an axis, and the error of an estimated transform over an image's brain voxels.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <utility>

#include "core/image/image.hpp"

namespace rtf::test {

// A grid of `dims` voxels of `voxel_mm`, axes rotated by `rotation` (its columns may be flipped), whose central voxel
// lies at `centre` (world mm).
ImageHeader centred_grid(std::array<int64_t, 3> dims, std::array<double, 3> voxel_mm, const Eigen::Matrix3d& rotation,
                         const Eigen::Vector3d& centre);

Eigen::Matrix3d rotation_about(double angle_rad, const Eigen::Vector3d& axis);

// Largest and mean distance between truth(X) and estimate(X) over the world positions X of the voxels of `image`
// above 0 (the brain of a skull-stripped image).
std::pair<double, double> errors_in_brain(const Image& image, const Eigen::Matrix4d& truth,
                                          const Eigen::Matrix4d& estimate);

}  // namespace rtf::test
