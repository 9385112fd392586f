// ctest-label: gpu
// DeviceQaVolumePass (the live QA stage's per-voxel measures in one launch over a ring slot) on odd grids with fresh
// random BOLD-like volumes, a random mask, NaNs in a few voxels and a carpet of voxels in random order, over a ring of
// 5 slots turning 3 times with a sliding window of 4: the slice means and the global signal within 1e-9 of the double
// reference (reference::slice_means; the kernel's sums are compensated), DVARS within 1e-6 of the host's double
// (the squares are float), the carpet column exact, the cumulative and sliding moments within 2 float steps of the data
// of DeviceVoxelMoments' own kernels fed the same volumes (themselves checked against the double reference in
// test_voxel_moments), with the default and other voxels a work-item; no earlier slot: DVARS NaN; bad slots and grids
// refused.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>

#include "core/qa/volume_pass.hpp"
#include "core/qa/voxel_moments.hpp"
#include "core/reference/qa_reference.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

// The two maps within `steps` float steps of the data (2^-23 of |mean| + 3 SD) of each other.
void expect_same_moments(const MomentMaps& got, const MomentMaps& want, double steps, const std::string& where) {
  int bad = 0;
  for (size_t v = 0; v < want.mean.size() && bad < 5; ++v) {
    if (std::isnan(want.mean[v])) {
      EXPECT_TRUE(std::isnan(got.mean[v]) && std::isnan(got.sd[v])) << where << " voxel " << v;
      continue;
    }
    const double step = (std::abs(want.mean[v]) + 3.0 * want.sd[v]) * std::ldexp(1.0, -23);
    if (std::abs(got.mean[v] - want.mean[v]) > steps * step || std::abs(got.sd[v] - want.sd[v]) > steps * step) {
      ++bad;
      ADD_FAILURE() << where << " voxel " << v << ": mean " << got.mean[v] << " vs " << want.mean[v] << ", sd "
                    << got.sd[v] << " vs " << want.sd[v];
    }
  }
}

TEST(QaVolumePass, MatchesTheSeparateMeasuresAsTheRingTurns) {
  Device& device = test::test_device();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> base(800.0f, 200.0f), noise(0.0f, 30.0f);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  struct Case {
    std::array<int64_t, 3> dims;
    size_t voxels_an_item;  // 0: the default
  };
  for (const Case c : {Case{{7, 5, 3}, 0}, Case{{37, 41, 5}, 0}, Case{{37, 41, 5}, 3}, Case{{37, 41, 5}, 1}}) {
    const std::array<int64_t, 3> dims = c.dims;
    SCOPED_TRACE(fmt::format("{}x{}x{}, {} voxels a work-item", dims[0], dims[1], dims[2], c.voxels_an_item));
    const auto voxels = static_cast<size_t>(dims[0] * dims[1] * dims[2]);
    const int capacity = 5, window = 4, volumes = 3 * capacity + 1;
    std::vector<uint8_t> mask(voxels);
    for (auto& m : mask) m = u(rng) < 0.6f ? 1 : 0;
    std::vector<int> carpet(voxels);
    std::iota(carpet.begin(), carpet.end(), 0);
    std::shuffle(carpet.begin(), carpet.end(), rng);
    carpet.resize(std::min<size_t>(voxels, 23));
    std::vector<float> mean(voxels);
    for (float& m : mean) m = std::max(base(rng), 100.0f);
    DeviceQaVolumePass pass(device, dims, mask, carpet, nullptr, c.voxels_an_item);
    ASSERT_EQ(pass.carpet_rows(), static_cast<int64_t>(carpet.size()));
    DeviceVoxelMoments cumulative(device, static_cast<int64_t>(voxels)), sliding(device, static_cast<int64_t>(voxels));
    DeviceVoxelMoments cumulative_want(device, static_cast<int64_t>(voxels)),
        sliding_want(device, static_cast<int64_t>(voxels));
    DeviceBuffer<float> ring(device, voxels * capacity), newest(device, voxels), leaving(device, voxels);
    std::vector<std::vector<float>> series;
    for (int t = 0; t < volumes; ++t) {
      std::vector<float> volume(voxels);
      for (size_t v = 0; v < voxels; ++v) volume[v] = std::round(mean[v] + noise(rng));
      if (t == 4) volume[1] = std::nanf("");  // voxel 1: out of the sums now, its moments NaN from now on
      if (t == 9) volume[voxels - 1] = std::numeric_limits<float>::infinity();
      series.push_back(volume);
      const int slot = t % capacity;
      ring.write(device.queue(), volume, static_cast<size_t>(slot) * voxels);
      newest.write(device.queue(), volume);
      const bool full = t >= window;
      const int leaving_slot = full ? (t - window) % capacity : -1;
      pass.enqueue(ring, slot, t > 0 ? (t - 1) % capacity : -1, cumulative, &sliding, leaving_slot);
      RTF_CL_CHECK(clFinish(device.queue()));
      const QaVolumeMeasures got = pass.result();
      const std::string where = fmt::format("{}x{}x{} volume {}", dims[0], dims[1], dims[2], t);

      const reference::SliceMeans want = reference::slice_means(volume, dims, mask);
      ASSERT_EQ(got.slice_means.size(), want.slice.size());
      for (size_t z = 0; z < want.slice.size(); ++z) {
        EXPECT_NEAR(got.slice_means[z], want.slice[z], 1e-9 * std::abs(want.slice[z])) << where << " slice " << z;
      }
      EXPECT_NEAR(got.global, want.global, 1e-9 * std::abs(want.global)) << where;
      if (t == 0) {
        EXPECT_TRUE(std::isnan(got.dvars)) << where;
      } else {
        double sum = 0.0;
        int64_t count = 0;
        for (size_t v = 0; v < voxels; ++v) {
          const double d = static_cast<double>(volume[v]) - series[static_cast<size_t>(t - 1)][v];
          if (mask[v] != 0 && std::isfinite(d)) {
            sum += d * d;
            ++count;
          }
        }
        const double dvars = std::sqrt(sum / static_cast<double>(count));
        EXPECT_NEAR(got.dvars, dvars, 1e-6 * dvars) << where;
      }
      ASSERT_EQ(got.carpet.size(), carpet.size());
      for (size_t r = 0; r < carpet.size(); ++r) {
        const float x = volume[static_cast<size_t>(carpet[r])];
        if (std::isnan(x)) {
          EXPECT_TRUE(std::isnan(got.carpet[r])) << where << " row " << r;
        } else {
          EXPECT_EQ(got.carpet[r], x) << where << " row " << r;
        }
      }

      cumulative_want.add(newest);
      if (full) {
        leaving.write(device.queue(), series[static_cast<size_t>(t - window)]);
        sliding_want.replace(newest, leaving);
      } else {
        sliding_want.add(newest);
      }
      ASSERT_EQ(cumulative.count(), cumulative_want.count());
      ASSERT_EQ(sliding.count(), sliding_want.count());
      expect_same_moments(cumulative.read_maps(), cumulative_want.read_maps(), 2.0, where + " cumulative");
      expect_same_moments(sliding.read_maps(), sliding_want.read_maps(), 2.0, where + " sliding");
    }
  }
}

TEST(QaVolumePass, RefusesBadSlotsAndGrids) {
  Device& device = test::test_device();
  const std::array<int64_t, 3> dims{3, 2, 2};
  const std::vector<uint8_t> mask(12, 1);
  const std::vector<int> carpet{0, 5};
  DeviceQaVolumePass pass(device, dims, mask, carpet);
  DeviceVoxelMoments moments(device, 12), other(device, 13);
  DeviceBuffer<float> ring(device, 36);
  EXPECT_THROW(pass.enqueue(ring, 3, -1, moments, nullptr, -1), std::invalid_argument);
  EXPECT_THROW(pass.enqueue(ring, 0, 3, moments, nullptr, -1), std::invalid_argument);
  EXPECT_THROW(pass.enqueue(ring, 0, -2, moments, nullptr, -1), std::invalid_argument);
  EXPECT_THROW(pass.enqueue(ring, 0, -1, other, nullptr, -1), std::invalid_argument);
  EXPECT_THROW((void)pass.result(), std::logic_error);
  EXPECT_THROW(DeviceQaVolumePass(device, dims, std::vector<uint8_t>(11, 1), carpet), std::invalid_argument);
  EXPECT_THROW(DeviceQaVolumePass(device, dims, mask, std::vector<int>{12}), std::invalid_argument);
  EXPECT_THROW(DeviceQaVolumePass(device, {0, 2, 2}, std::vector<uint8_t>{}, {}), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
