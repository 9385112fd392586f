// Double-precision reference for the brain mask: direct smoothing, mean, threshold.
#pragma once

#include <cstdint>
#include <vector>

#include "core/image/image.hpp"

namespace rtf::reference {

struct BrainMaskReference {
  std::vector<double> smoothed;
  double threshold = 0.0;
  std::vector<uint8_t> inside;
};

// `volume` is a 3D image; taps per axis as used by the device smoother.
BrainMaskReference brain_mask(const Image& volume, const std::array<std::vector<double>, 3>& taps, double fraction);

}  // namespace rtf::reference
