// Reproducible random numbers for the phantom: std::mt19937_64 (whose output sequence the C++ standard fixes)
// seeded per purpose ("stream") and per slice through SplitMix64, with uniform and normal (Marsaglia polar)
// variates computed here rather than by std:: distributions, whose algorithms differ between standard
// libraries. Same seed -> same phantom on every platform and for any thread count.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace rtf::sim {

// Independent streams of one phantom.
inline constexpr uint64_t kStreamMotion = 1;
inline constexpr uint64_t kStreamVoxelFields = 2;  // per-voxel physiological phases, drift gradient
inline constexpr uint64_t kStreamPhysioRates = 3;  // heart and breathing rate variation
inline constexpr uint64_t kStreamThermal = 4;      // thermal noise, further split per slice

// SplitMix64 finaliser: a well-mixed 64-bit value from any 64-bit input.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream, uint64_t substream = 0)
      : engine_(mix64(mix64(mix64(seed) ^ stream) ^ (substream * 0xD1B54A32D192ED03ull))) {}

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

  // Standard normal (Marsaglia's polar method; the second variate of each pair is kept for the next call).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u = 0.0, v = 0.0, s = 0.0;
    do {
      u = 2.0 * uniform() - 1.0;
      v = 2.0 * uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double m = std::sqrt(-2.0 * std::log(s) / s);
    spare_ = v * m;
    has_spare_ = true;
    return u * m;
  }

 private:
  std::mt19937_64 engine_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace rtf::sim
