// Normal and gamma draws from Philox streams, the host twin of kernels/random_draws.clh (same words, same algorithm,
// computed in double; docs/algorithms/random_streams.md): Box–Muller pairs and Marsaglia & Tsang's gamma (2000), a
// draw named by (seed key, voxel, chain, step, slot), its Philox blocks slot << 16 | attempt.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "core/random/philox.hpp"

namespace rtf::random {

struct StreamPoint {
  PhiloxKey key{};
  uint32_t voxel = 0, chain = 0, step = 0;
  PhiloxCounter block(uint32_t slot, uint32_t attempt) const {
    return stream_counter(voxel, chain, step, (slot << 16) | attempt);
  }
};

inline std::array<double, 2> normal_from_words(uint32_t w0, uint32_t w1) {
  const double r = std::sqrt(-2.0 * std::log(static_cast<double>(uniform_float(w0))));
  const double angle = 2.0 * std::numbers::pi * static_cast<double>(uniform_float(w1));
  return {r * std::cos(angle), r * std::sin(angle)};
}

inline std::array<double, 2> normal_pair(const StreamPoint& at, uint32_t slot) {
  const PhiloxCounter w = philox4x32_10(at.block(slot, 0), at.key);
  return normal_from_words(w[0], w[1]);
}

// Gamma(shape, 1). Optionally returns how many blocks the rejection loop used and the smallest margin of its
// decisions (|t| and |log u - bound| over the attempts): a float computation of the same words (the device's) can
// decide otherwise only where that margin is within its rounding.
inline double gamma_draw(const StreamPoint& at, uint32_t slot, double shape, int* attempts = nullptr,
                         double* margin = nullptr) {
  const double a = shape < 1.0 ? shape + 1.0 : shape;
  const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  double x = d;
  uint32_t first_u = 0;
  uint32_t attempt = 0;
  double closest = INFINITY;
  for (; attempt < 65535u; ++attempt) {
    const PhiloxCounter w = philox4x32_10(at.block(slot, attempt), at.key);
    if (attempt == 0) first_u = w[3];
    const double z = normal_from_words(w[0], w[1])[0];
    const double t = 1.0 + c * z;
    closest = std::min(closest, std::abs(t));
    if (t <= 0.0) continue;
    const double v = t * t * t;
    const double lhs = std::log(static_cast<double>(uniform_float(w[2]))),
                 rhs = 0.5 * z * z + d - d * v + d * std::log(v);
    closest = std::min(closest, std::abs(lhs - rhs));
    if (lhs < rhs) {
      x = d * v;
      break;
    }
  }
  if (attempts != nullptr) *attempts = static_cast<int>(attempt) + 1;
  if (margin != nullptr) *margin = closest;
  return shape < 1.0 ? x * std::pow(static_cast<double>(uniform_float(first_u)), 1.0 / shape) : x;
}

}  // namespace rtf::random
