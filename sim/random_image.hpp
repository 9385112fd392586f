// Random images with fixed seeds for tests and benchmarks: smooth-ish positive "brain-like" data
// or plain uniform noise, on any grid (odd sizes welcome).
#pragma once

#include <array>
#include <cstdint>

#include "core/image/image.hpp"

namespace rtf::sim {

struct RandomImageSpec {
  std::array<int64_t, 3> dims{17, 13, 11};
  int64_t num_volumes = 1;
  std::array<double, 3> voxel_mm{3.0, 3.0, 3.0};
  double tr_s = 2.0;
  float low = 0.0f;
  float high = 1000.0f;
  uint64_t seed = 1;
};

// Uniform noise in [low, high) in every voxel.
Image random_image(const RandomImageSpec& spec);

}  // namespace rtf::sim
