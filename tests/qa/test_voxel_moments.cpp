// ctest-label: gpu
// DeviceVoxelMoments against the two-pass double reference (reference::voxel_moments) on odd sizes and fresh random
// BOLD-like volumes (voxel means 800 +- 200, noise SD 60), in float steps of the data (2^-23 of |mean| + 3 SD): after
// every added volume the mean within 8 steps, the SD within 1e-5 of itself plus 16 steps, the tSNR within what those
// make of it (seen: under 3 steps); a sliding window of 7 over 60 volumes (53 replacements) within 32 and 64 steps;
// a constant voxel
// has SD 0 and tSNR 0, a NaN makes the voxel's maps NaN; bad sizes and a replace before any add are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/qa/voxel_moments.hpp"
#include "core/reference/qa_reference.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

std::vector<std::vector<float>> random_volumes(std::mt19937_64& rng, size_t voxels, int count) {
  std::normal_distribution<float> base(800.0f, 200.0f), noise(0.0f, 60.0f);
  std::vector<float> mean(voxels);
  for (float& m : mean) m = std::max(base(rng), 100.0f);  // BOLD: positive, well above 0
  std::vector<std::vector<float>> volumes(static_cast<size_t>(count), std::vector<float>(voxels));
  for (auto& volume : volumes) {
    for (size_t v = 0; v < voxels; ++v) volume[v] = mean[v] + noise(rng);
  }
  return volumes;
}

// Float Welford updates against double sums. Rounding is measured in float steps of the data (2^-23 of |mean| + 3 SD,
// the size of a typical value): the mean within `mean_steps` of them; the SD within 1e-5 of itself plus `sd_steps` (the
// differences x - mean lose what the float grid of x cannot hold, however small the SD); the tSNR (mean / SD) within
// what those two errors make of it.
void expect_maps(const MomentMaps& got, const reference::VoxelMoments& want, double mean_steps, double sd_steps,
                 const std::string& where) {
  int bad = 0;
  for (size_t v = 0; v < want.mean.size() && bad < 5; ++v) {
    const double step = (std::abs(want.mean[v]) + 3 * want.sd[v]) * std::ldexp(1.0, -23);
    const double mean_tol = mean_steps * step, sd_tol = 1e-5 * want.sd[v] + sd_steps * step;
    const double tsnr_tol = (mean_tol + std::abs(want.tsnr[v]) * sd_tol) / want.sd[v];
    const bool ok = std::abs(got.mean[v] - want.mean[v]) <= mean_tol && std::abs(got.sd[v] - want.sd[v]) <= sd_tol &&
                    std::abs(got.tsnr[v] - want.tsnr[v]) <= tsnr_tol;
    if (!ok) {
      ++bad;
      ADD_FAILURE() << where << " voxel " << v << ": mean " << got.mean[v] << " vs " << want.mean[v] << " ("
                    << std::abs(got.mean[v] - want.mean[v]) / step << " steps), sd " << got.sd[v] << " vs "
                    << want.sd[v] << " (" << std::abs(got.sd[v] - want.sd[v]) / step << " steps), tsnr " << got.tsnr[v]
                    << " vs " << want.tsnr[v];
    }
  }
}

TEST(VoxelMoments, CumulativeMatchesTheTwoPassReferenceAfterEveryVolume) {
  Device& device = test::test_device();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const size_t voxels : {size_t{1}, size_t{257}, size_t{19 * 23 * 17}}) {
    const auto volumes = random_volumes(rng, voxels, 40);
    DeviceVoxelMoments moments(device, static_cast<int64_t>(voxels));
    DeviceBuffer<float> buffer(device, voxels);
    for (size_t t = 0; t < volumes.size(); ++t) {
      buffer.write(device.queue(), volumes[t]);
      moments.add(buffer);
      ASSERT_EQ(moments.count(), static_cast<int64_t>(t + 1));
      if (t == 0) continue;  // one volume: SD 0 everywhere (checked below)
      expect_maps(moments.read_maps(), reference::voxel_moments(volumes, 0, t + 1), 8, 16,
                  "voxels " + std::to_string(voxels) + " volumes " + std::to_string(t + 1));
    }
  }
}

TEST(VoxelMoments, SlidingWindowMatchesTheReferenceOverTheLastVolumes) {
  Device& device = test::test_device();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const size_t voxels = 31 * 29 * 11;
  const int window = 7;
  const auto volumes = random_volumes(rng, voxels, 60);
  std::vector<DeviceBuffer<float>> ring;
  for (const auto& volume : volumes) {
    ring.emplace_back(device, voxels);
    ring.back().write(device.queue(), volume);
  }
  DeviceVoxelMoments moments(device, static_cast<int64_t>(voxels));
  for (size_t t = 0; t < volumes.size(); ++t) {
    if (t < static_cast<size_t>(window)) {
      moments.add(ring[t]);
    } else {
      moments.replace(ring[t], ring[t - window]);
    }
    ASSERT_EQ(moments.count(), std::min<int64_t>(static_cast<int64_t>(t) + 1, window));
    if (t + 1 < static_cast<size_t>(window)) continue;
    expect_maps(moments.read_maps(), reference::voxel_moments(volumes, t + 1 - window, t + 1), 32, 64,
                "window ending at volume " + std::to_string(t));
  }
}

TEST(VoxelMoments, ConstantVoxelsNaNAndBadUse) {
  Device& device = test::test_device();
  const size_t voxels = 5;
  DeviceVoxelMoments moments(device, voxels);
  DeviceBuffer<float> buffer(device, voxels);
  EXPECT_THROW(moments.replace(buffer, buffer), std::logic_error);
  EXPECT_THROW(moments.compute_maps(), std::logic_error);
  buffer.write(device.queue(), std::vector<float>{5, 5, 5, 5, 5});
  moments.add(buffer);
  MomentMaps one = moments.read_maps();
  EXPECT_EQ(one.sd, std::vector<float>(voxels, 0.0f)) << "one volume: no spread";
  EXPECT_EQ(one.tsnr, std::vector<float>(voxels, 0.0f)) << "tSNR 0 where the SD is 0";
  buffer.write(device.queue(), std::vector<float>{5, 7, std::nanf(""), 5, INFINITY});
  moments.add(buffer);
  MomentMaps two = moments.read_maps();
  EXPECT_FLOAT_EQ(two.mean[1], 6.0f);
  EXPECT_FLOAT_EQ(two.sd[1], 1.0f);
  EXPECT_FLOAT_EQ(two.tsnr[1], 6.0f);
  EXPECT_EQ(two.sd[0], 0.0f);
  EXPECT_TRUE(std::isnan(two.tsnr[2]) && std::isnan(two.sd[2])) << "a NaN value makes the voxel's maps NaN";
  EXPECT_TRUE(std::isnan(two.tsnr[4])) << "so does an infinite one";
  DeviceBuffer<float> small(device, voxels - 1);
  EXPECT_THROW(moments.add(small), std::invalid_argument);
  EXPECT_THROW(DeviceVoxelMoments(device, 0), std::invalid_argument);
  moments.reset();
  EXPECT_EQ(moments.count(), 0);
}

}  // namespace
}  // namespace rtf
