// Synthetic diffusion schemes and ball-and-stick voxels with noise.
#include "core/diffusion/synthetic_dwi.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <random>
#include <stdexcept>

#include "core/diffusion/ball_stick_signal.hpp"
#include "core/util/host_threads.hpp"

namespace rtf {
namespace {

constexpr size_t kVoxelsPerBlock = 4096;

// SplitMix64's finaliser: well-mixed, distinct seeds for (seed, block).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

DiffusionScheme synthetic_scheme(int directions, int b0s, double bvalue) {
  if (directions < 1 || b0s < 0 || !(bvalue > 0)) {
    throw std::invalid_argument(fmt::format(
        "synthetic_scheme: need directions >= 1, b0s >= 0 and bvalue > 0 (got {}, {}, {})", directions, b0s, bvalue));
  }
  const int total = directions + b0s;
  std::vector<bool> is_b0(static_cast<size_t>(total), false);
  for (int k = 0; k < b0s; ++k) is_b0[static_cast<size_t>(static_cast<int64_t>(k) * total / b0s)] = true;

  DiffusionScheme scheme;
  scheme.bvals.reserve(static_cast<size_t>(total));
  scheme.bvecs.reserve(static_cast<size_t>(total));
  const double golden_angle = std::numbers::pi * (3.0 - std::sqrt(5.0));
  int i = 0;
  for (int v = 0; v < total; ++v) {
    if (is_b0[static_cast<size_t>(v)]) {
      scheme.bvals.push_back(0.0);
      scheme.bvecs.push_back({0.0, 0.0, 0.0});
      continue;
    }
    const double z = 1.0 - (i + 0.5) / directions;
    const double r = std::sqrt(std::max(0.0, 1.0 - z * z));
    const double phi = golden_angle * i;
    scheme.bvals.push_back(bvalue);
    scheme.bvecs.push_back({r * std::cos(phi), r * std::sin(phi), z});
    ++i;
  }
  return scheme;
}

std::vector<float> synthetic_voxels(const DiffusionScheme& scheme, const std::vector<BallStickParams>& truth,
                                    int fibres, int model, double snr, bool rician, uint64_t seed) {
  if (fibres < 1 || fibres > kBallStickMaxFibres || (model != 1 && model != 2)) {
    throw std::invalid_argument(fmt::format("synthetic_voxels: need 1 <= fibres <= {} and model 1 or 2 (got {}, {})",
                                            kBallStickMaxFibres, fibres, model));
  }
  const size_t n = static_cast<size_t>(scheme.measurements());
  const size_t voxels = truth.size();
  const bool noisy = snr > 0 && std::isfinite(snr);
  std::vector<float> out(voxels * n);
  const size_t blocks = (voxels + kVoxelsPerBlock - 1) / kVoxelsPerBlock;
  host_ranges(blocks, host_thread_count(), [&](size_t block_begin, size_t block_end, size_t) {
    for (size_t block = block_begin; block < block_end; ++block) {
      std::mt19937_64 generator(mix(seed ^ mix(block)));
      std::normal_distribution<double> normal;
      const size_t end = std::min(voxels, (block + 1) * kVoxelsPerBlock);
      for (size_t v = block * kVoxelsPerBlock; v < end; ++v) {
        const std::vector<double> s = ball_stick_signal(scheme, truth[v], fibres, model);
        const double sigma = noisy ? truth[v].s0 / snr : 0.0;
        float* row = out.data() + v * n;
        for (size_t i = 0; i < n; ++i) {
          double value = s[i];
          if (noisy) {
            const double re = value + sigma * normal(generator);
            value = rician ? std::hypot(re, sigma * normal(generator)) : re;
          }
          row[i] = static_cast<float>(value);
        }
      }
    }
  });
  return out;
}

}  // namespace rtf
