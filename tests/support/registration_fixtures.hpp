// Helpers shared by the registration tests: grids of any voxel size and orientation centred on a point, rotations
// about an axis, the error of an estimated transform over an image's brain voxels, and the image pairs of the
// similarity-cost tests (random blobs with a non-linear intensity relation; Colin27 against its inverted contrast).
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

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

// Random blobs on an oblique 3 mm fixed grid and, moved by a small known transform, on a rotated moving grid of
// another size and voxel size, with the square root of their intensities (a non-linear relation); a random mask of
// three quarters of the fixed voxels.
struct BlobPair {
  Image fixed, moving;
  std::vector<uint8_t> mask;
};
BlobPair blob_pair(uint32_t seed);

// A transform near the blob pair's truth (a few degrees, scales and mm off), where the costs are evaluated.
Eigen::Matrix4d perturbed_estimate();

// Colin27 on a 2 mm fixed grid; the moving image: its contrast inverted inside the head (0 stays 0), on a flipped,
// rotated 3 mm grid, moved by `truth` (fixed world -> moving world). Empty images when Colin27 is not installed.
struct CrossModalPair {
  Image fixed, moving;
};
CrossModalPair cross_modal_pair(const Eigen::Matrix4d& truth);

}  // namespace rtf::test
