// Double-precision reference for resampling through a chain of affines and displacement fields
// (core/registration/resample.hpp), written for clarity: each reference voxel's point goes through the chain and is
// sampled on the host with the conventions of kernels/sampling.clh (core/registration/point_sampling.hpp).
#pragma once

#include <Eigen/Core>
#include <vector>

#include "core/image/image.hpp"
#include "core/registration/displacement_field.hpp"
#include "core/registration/resample.hpp"

namespace rtf::reference {

// Every volume of `input` sampled at A_in^-1 chain[n-1](...chain[0](A_ref v)) for each voxel v of `reference`.
Image resample(const Image& input, const ImageHeader& reference, const std::vector<SpatialTransform>& chain,
               ResampleInterpolation interpolation, double outside = 0.0);

}  // namespace rtf::reference
