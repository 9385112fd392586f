// The ball-and-stick sampler's starting state of every voxel computed on the device (kernels/ball_stick_start.cl), one
// work-item per voxel in double: the same tensor fit, Levenberg-Marquardt fits and bounds as the host's
// initialise_ball_stick (core/diffusion/ball_stick_init.hpp, the double reference it is tested against), so that the
// start divides over GPUs with the chains instead of loading the host's cores.
#pragma once

#include <cstdint>
#include <vector>

#include "core/device/device.hpp"
#include "core/diffusion/ball_stick_model.hpp"

namespace rtf {

// Every voxel's starting state as initialise_ball_stick defines it: data is [voxel][measurement]
// (scheme.measurements() floats per voxel); `fitted`, when given, receives 1 per fitted voxel and 0 per voxel given the
// neutral state. Throws std::invalid_argument for the arguments initialise_ball_stick refuses and for a device without
// cl_khr_fp64 (then use initialise_ball_stick).
std::vector<BallStickParams> initialise_ball_stick_on_device(Device& device, const DiffusionScheme& scheme,
                                                             const float* data, int voxels, int fibres, int model,
                                                             std::vector<uint8_t>* fitted = nullptr);

}  // namespace rtf
