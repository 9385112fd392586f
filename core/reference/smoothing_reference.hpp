// Double-precision reference for Gaussian smoothing, written for clarity: a direct (non-separable)
// 3D normalised convolution out(x) = sum_y w(x-y) c(y) v(y) / sum_y w(x-y) c(y), where w is the
// product of the per-axis taps and c(y) = 1 for in-bounds voxels inside the mask (all in-bounds
// voxels when there is no mask). Outside the mask the output is 0.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace rtf::reference {

std::vector<double> smooth_volume(std::span<const float> volume, std::array<int64_t, 3> dims,
                                  const std::array<std::vector<double>, 3>& taps,
                                  std::optional<std::span<const uint8_t>> mask = std::nullopt);

}  // namespace rtf::reference
