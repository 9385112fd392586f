// Volume synthesis of the phantom: for every volume t and EPI voxel v (slice z acquired at t * TR + s_z),
//   S  = S0 + sum_c A_c x_c(t * TR + s_z)           template maps sampled into v with the head moved by M_t
//   P  = a W (sin(phi_c + theta_v) + sin(phi_r + psi_v))   physiological fluctuation
//   c  = (S + P) (1 + D g_v drift(t * TR + s_z))            slow drift
//   y  = |c + sigma (n1 + i n2)|  (Rician)   or   c + sigma n1  (Gaussian)
// in parallel over slices (each thread owns whole slices, so results do not depend on the thread count).
#pragma once

#include <cstdint>
#include <vector>

#include "core/geometry/rigid_transform.hpp"
#include "core/image/image.hpp"
#include "sim/phantom/channel_volume.hpp"
#include "sim/phantom/design.hpp"
#include "sim/phantom/noise_model.hpp"

namespace rtf::sim {

struct SynthesisInputs {
  const PhantomSpec* spec = nullptr;
  const EpiGrid* grid = nullptr;
  const ChannelVolume* signal = nullptr;             // template_channels.hpp's signal_channels
  const std::vector<RigidParams>* motion = nullptr;  // one per volume, about grid->centre_mm
  const Design* design = nullptr;
  NoiseLevels levels;                 // noise_levels(spec), possibly calibrated (phantom.cpp)
  std::vector<double> slice_times_s;  // per slice, from the start of the volume
  std::vector<uint8_t> measure;       // per EPI voxel: 1 to measure its tSNR
};

struct SynthesisResult {
  Image bold;  // float32 values in output units
  // Per EPI voxel (NaN where not measured): mean of y over time / sd of its noise (y - S (1 + drift)) after removing
  // a quadratic (Legendre order 2) trend, with n - 3 degrees of freedom.
  std::vector<float> tsnr;
  double seconds = 0.0;
  int threads = 1;
};

SynthesisResult synthesize(const SynthesisInputs& in);

}  // namespace rtf::sim
