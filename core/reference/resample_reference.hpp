// Double-precision reference for resampling through a chain of affines and displacement fields
// (core/registration/resample.hpp), written for clarity, with the sampling conventions of kernels/sampling.clh: a point
// is inside when -0.5 <= u <= n - 0.5 on every axis; taps are clamped to the volume; nearest takes floor(u + 0.5);
// linear is trilinear; cubic is Keys (a = -0.5).
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/image/image.hpp"
#include "core/registration/displacement_field.hpp"
#include "core/registration/resample.hpp"

namespace rtf::reference {

// The sample of `volume` (x fastest, `dims`) at voxel coordinates u (the caller checks that u is inside).
double sample_clamped(std::span<const float> volume, const std::array<int64_t, 3>& dims, const Eigen::Vector3d& u,
                      ResampleInterpolation interpolation);

bool inside_volume(const std::array<int64_t, 3>& dims, const Eigen::Vector3d& u);

// The image of a point under one transform: an affine, or x + u(x) with u interpolated trilinearly on the field's
// grid (0 outside it).
Eigen::Vector3d transform_point(const SpatialTransform& transform, const Eigen::Vector3d& point);

// Every volume of `input` sampled at A_in^-1 chain[n-1](...chain[0](A_ref v)) for each voxel v of `reference`.
Image resample(const Image& input, const ImageHeader& reference, const std::vector<SpatialTransform>& chain,
               ResampleInterpolation interpolation, double outside = 0.0);

}  // namespace rtf::reference
