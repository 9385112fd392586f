// Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3", SC 2011), the host side of
// the device's counter-based generator (kernels/philox.clh; docs/algorithms/random_streams.md). A 128-bit counter and a
// 64-bit key give four 32-bit words; nothing is carried from call to call, so any draw of any chain can be recomputed
// from its coordinates. Streams: key = the run's seed, counter = (voxel, chain, step, block) — see stream_counter.
// Equal, word for word, to Random123's philox4x32_R(10, ...) (tests/random/test_philox.cpp).
#pragma once

#include <array>
#include <cstdint>

namespace rtf::random {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

constexpr uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;  // round multipliers
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;  // key increments (Weyl sequence)

constexpr PhiloxCounter philox4x32_10(PhiloxCounter x, PhiloxKey k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kPhiloxW0;
      k[1] += kPhiloxW1;
    }
    const uint64_t p0 = uint64_t{kPhiloxM0} * x[0], p1 = uint64_t{kPhiloxM1} * x[2];
    const auto hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const auto hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    x = {hi1 ^ x[1] ^ k[0], lo1, hi0 ^ x[3] ^ k[1], lo0};
  }
  return x;
}

// The key of a run's streams: its 64-bit seed.
constexpr PhiloxKey seed_key(uint64_t seed) {
  return {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
}

// The counter of draw block `block` (four words) of `chain`'s step `step` at `voxel`.
constexpr PhiloxCounter stream_counter(uint32_t voxel, uint32_t chain, uint32_t step, uint32_t block) {
  return {voxel, chain, step, block};
}

// A word as a float uniform in (0, 1): its top 23 bits m, centred in their interval, (m + 0.5) 2^-23 — exact in float
// (24 significant bits), from 2^-24 to 1 - 2^-24, never 0 or 1, so log() and 1/u are safe.
constexpr float uniform_float(uint32_t word) {
  return (static_cast<float>(word >> 9) + 0.5f) * 0x1.0p-23f;
}

// Two words as a double uniform in (0, 1): 52 bits m, (m + 0.5) 2^-52 (exact), from 2^-53 to 1 - 2^-53.
constexpr double uniform_double(uint32_t high, uint32_t low) {
  const uint64_t m = (uint64_t{high} << 20) ^ (low >> 12);
  return (static_cast<double>(m) + 0.5) * 0x1.0p-52;
}

}  // namespace rtf::random
