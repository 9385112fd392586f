// Shared by the connectivity tests: synthetic BOLD-like series with correlations over the whole range, a NaN-aware
// comparison of device maps against the double reference, and a live-ring driver.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>

#include "core/connectivity/window.hpp"
#include "core/image/image.hpp"
#include "core/ring/device_ring_buffer.hpp"

namespace rtf::test {

struct SeriesSpec {
  std::array<int64_t, 3> dims{19, 15, 11};
  int64_t volumes = 40;
  double baseline = 1000.0;  // per-voxel baseline uniform in baseline +- 10%
  double signal = 10.0;      // shared signal amplitude; each voxel's weight is uniform in [-1, 1]
  double noise = 5.0;        // white noise standard deviation
  double drift = 0.0;        // linear drift over the run, as a fraction of the baseline
  uint64_t seed = 1;
};

// Voxel v, volume t: b_v (1 + drift t / T) + w_v * signal * s_t + noise e_{v,t}, with s_t a random walk smoothed to
// look like a slow BOLD fluctuation (unit variance), w_v in [-1, 1]. 3 mm voxels, affine centred on the grid.
inline Image make_series(const SeriesSpec& spec) {
  ImageHeader h;
  h.dims = spec.dims;
  h.num_volumes = spec.volumes;
  h.voxel_mm = {3.0, 3.0, 3.0};
  h.tr_s = 2.0;
  h.affine = Eigen::Matrix4d::Identity();
  for (int d = 0; d < 3; ++d) {
    h.affine(d, d) = 3.0;
    h.affine(d, 3) = -1.5 * static_cast<double>(spec.dims[static_cast<size_t>(d)] - 1);
  }
  Image img(h);
  std::mt19937_64 rng(spec.seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  const int64_t nvox = h.voxels_per_volume();
  std::vector<double> base(static_cast<size_t>(nvox)), weight(static_cast<size_t>(nvox));
  for (int64_t v = 0; v < nvox; ++v) {
    base[static_cast<size_t>(v)] = spec.baseline * (1.0 + 0.1 * unit(rng));
    weight[static_cast<size_t>(v)] = unit(rng);
  }
  double s = 0.0;
  for (int64_t t = 0; t < spec.volumes; ++t) {
    s = 0.8 * s + 0.6 * normal(rng);  // AR(1) with unit stationary variance
    const double trend = 1.0 + spec.drift * static_cast<double>(t) / static_cast<double>(spec.volumes);
    auto vol = img.volume(t);
    for (int64_t v = 0; v < nvox; ++v) {
      const auto i = static_cast<size_t>(v);
      vol[i] = static_cast<float>(base[i] * trend + weight[i] * spec.signal * s + spec.noise * normal(rng));
    }
  }
  return img;
}

// Largest |got - ref| over the elements where the reference is finite; elements whose finiteness differs are counted.
struct MapError {
  double max_abs = 0.0;
  int64_t mismatched_nan = 0;
  int64_t compared = 0;
  int64_t worst = -1;
};

inline MapError compare_maps(std::span<const float> got, std::span<const double> ref) {
  MapError e;
  EXPECT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < std::min(got.size(), ref.size()); ++i) {
    if (std::isnan(ref[i]) != std::isnan(got[i]) || std::isinf(got[i])) {
      ++e.mismatched_nan;
      continue;
    }
    if (std::isnan(ref[i])) continue;
    ++e.compared;
    const double d = std::abs(static_cast<double>(got[i]) - ref[i]);
    if (d > e.max_abs) {
      e.max_abs = d;
      e.worst = static_cast<int64_t>(i);
    }
  }
  return e;
}

// Fisher z errors scaled by dz/dr = 1 / (1 - r^2): max |z_got - z_ref| * (1 - r_ref^2), comparable to an r error.
inline MapError compare_z(std::span<const float> got, std::span<const double> z_ref, std::span<const double> r_ref) {
  MapError e;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(z_ref[i]) != std::isnan(got[i]) || std::isinf(got[i])) {
      ++e.mismatched_nan;
      continue;
    }
    if (std::isnan(z_ref[i])) continue;
    ++e.compared;
    const double d = std::abs(static_cast<double>(got[i]) - z_ref[i]) * (1.0 - r_ref[i] * r_ref[i]);
    if (d > e.max_abs) {
      e.max_abs = d;
      e.worst = static_cast<int64_t>(i);
    }
  }
  return e;
}

inline std::string describe(const MapError& e) {
  return "max_abs=" + std::to_string(e.max_abs) + " mismatched_nan=" + std::to_string(e.mismatched_nan) +
         " compared=" + std::to_string(e.compared) + " worst=" + std::to_string(e.worst);
}

// Pushes every volume of `bold` in order into `ring` (as float32 payloads) and calls each(t, slots in time order,
// newest slot, the push's event) after each push.
inline void drive_ring(DeviceRingBuffer& ring, const Image& bold,
                       const std::function<void(int64_t, std::span<const int64_t>, int64_t, const ClEvent&)>& each) {
  std::vector<int64_t> slots;
  slots.reserve(static_cast<size_t>(ring.capacity()));
  for (int64_t t = 0; t < bold.nt(); ++t) {
    const auto vol = bold.volume(t);
    const ClEvent pushed = ring.push(t, std::as_bytes(vol), DataType::kFloat32);
    ring_slots_in_time_order(ring, slots);
    each(t, slots, ring.slot_of(t), pushed);
  }
}

}  // namespace rtf::test
