// Synthetic volumes for registration tests: an oblique grid and smooth random Gaussian blobs in world mm, optionally
// moved by a rigid transform and multiplied by a linear intensity shading.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <vector>

#include "core/image/image.hpp"

namespace rtf::test {

// A grid of `dims` voxels of 3 x 3 x 3.5 mm, rotated 0.15 rad about an oblique axis, centred on the world origin.
ImageHeader oblique_header(std::array<int64_t, 3> dims);

// Nine blobs (one central, eight random from `seed`) sampled at T^-1 x, times (1 + shading . x / 50).
std::vector<float> blobs(const ImageHeader& h, uint32_t seed, const Eigen::Matrix4d& t = Eigen::Matrix4d::Identity(),
                         const Eigen::Vector3d& shading = Eigen::Vector3d::Zero());

}  // namespace rtf::test
