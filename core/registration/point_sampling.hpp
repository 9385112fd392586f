// Sampling on the host with the device's conventions (kernels/sampling.clh), and a world point through one transform of
// a chain: used where production maps points rather than images (subject-space ROIs, the warp phantom) and by the
// double-precision references (core/reference/). A point is inside when -0.5 <= u <= n - 0.5 on every axis; taps are
// clamped to the volume; nearest takes floor(u + 0.5); linear is trilinear; cubic is Keys (a = -0.5).
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <span>

#include "core/registration/displacement_field.hpp"
#include "core/registration/resample.hpp"

namespace rtf {

// The sample of `volume` (x fastest, `dims`) at voxel coordinates u (the caller checks that u is inside).
double sample_clamped(std::span<const float> volume, const std::array<int64_t, 3>& dims, const Eigen::Vector3d& u,
                      ResampleInterpolation interpolation);

bool inside_volume(const std::array<int64_t, 3>& dims, const Eigen::Vector3d& u);

// The image of a point under one transform: an affine, or x + u(x) with u interpolated trilinearly on the field's
// grid (0 outside it).
Eigen::Vector3d transform_point(const SpatialTransform& transform, const Eigen::Vector3d& point);

}  // namespace rtf
