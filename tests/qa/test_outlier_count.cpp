// ctest-label: gpu
// DeviceOutlierCount (AFNI 3dToutcount's rule, polort 0) against the double reference (reference::outlier_counts) on
// odd grids and series of odd and even length, fresh random BOLD-like series with injected spikes, a NaN voxel and a
// voxel of MAD 0 (nearly constant): each volume's count lies between the reference's sure outliers and those plus the
// borderline ones (within 1e-5 of the threshold, where float rounding may decide), with the series in local memory and
// in scratch rows, in one launch and in many (a small
// scratch budget); the newest-volume count of a ring equals the every-volume count at that slot; the threshold equals
// scipy's norm.isf(0.001 / N) * sqrt(pi / 2) within 1e-9; bad sizes are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/qa/outlier_count.hpp"
#include "core/reference/qa_reference.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

TEST(OutlierCount, ThresholdIsAfnisFromScipy) {
  // scipy.stats.norm.isf(0.001 / n) * math.sqrt(math.pi / 2), scipy 1.10.1.
  const std::pair<int, double> want[] = {{1, 3.873031836909201},
                                         {10, 4.66109593813101},
                                         {40, 5.082974631118887},
                                         {100, 5.345247926130203},
                                         {600, 5.826824032452334}};
  for (const auto& [n, scale] : want) EXPECT_NEAR(DeviceOutlierCount::threshold_scale(n), scale, 1e-9) << n;
  EXPECT_THROW(DeviceOutlierCount::threshold_scale(0), std::invalid_argument);
}

struct Series {
  std::vector<std::vector<float>> volumes;  // [t][voxel]
  std::vector<float> flat;                  // t-major, as the device holds them
};

Series random_series(std::mt19937_64& rng, size_t voxels, int n) {
  std::normal_distribution<float> base(800.0f, 150.0f), noise(0.0f, 20.0f), spike(0.0f, 400.0f);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> mean(voxels);
  for (float& m : mean) m = std::max(base(rng), 100.0f);
  Series s;
  s.volumes.assign(static_cast<size_t>(n), std::vector<float>(voxels));
  for (auto& volume : s.volumes) {
    for (size_t v = 0; v < voxels; ++v) {
      volume[v] = std::round(mean[v] + noise(rng));  // int16-like data: ties in the medians
      if (u(rng) < 0.01f) volume[v] += spike(rng);   // sporadic spikes
    }
  }
  if (voxels > 3) {
    s.volumes[static_cast<size_t>(n / 2)][1] = std::nanf("");  // a voxel with a NaN: never an outlier
    for (auto& volume : s.volumes) volume[2] = 500.0f;         // MAD 0: more than half its values are equal,
    s.volumes[0][2] = 900.0f;                                  // so this one is not called an outlier
  }
  for (const auto& volume : s.volumes) s.flat.insert(s.flat.end(), volume.begin(), volume.end());
  return s;
}

TEST(OutlierCount, EveryVolumeMatchesTheReference) {
  Device& device = test::test_device();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const size_t voxels : {size_t{5}, size_t{23 * 19 * 7}}) {
    for (const int n : {1, 2, 37, 40}) {
      const Series s = random_series(rng, voxels, n);
      std::vector<uint8_t> mask(voxels);
      std::bernoulli_distribution inside(0.8);
      for (auto& m : mask) m = inside(rng) ? 1 : 0;
      mask[1] = mask[2] = 1;
      const auto want = reference::outlier_counts(s.volumes, mask, DeviceOutlierCount::threshold_scale(n));
      DeviceBuffer<float> buffer(device, s.flat.size());
      buffer.write(device.queue(), s.flat);
      // One launch, and launches of 7 voxels' series each; the series in local memory and in scratch rows.
      for (const auto& [scratch, local_rows] :
           {std::pair{int64_t{256} << 20, true}, std::pair{int64_t{4} * n * 7, true},
            std::pair{int64_t{256} << 20, false}}) {
        DeviceOutlierCount count(device, mask, n, scratch, local_rows);
        EXPECT_EQ(count.uses_local_rows(), local_rows) << "these series fit local memory";
        const std::vector<int64_t> got = count.count_every_volume(buffer, n);
        ASSERT_EQ(got.size(), static_cast<size_t>(n));
        int64_t total = 0;
        for (size_t t = 0; t < got.size(); ++t) {
          EXPECT_GE(got[t], want.sure[t]) << voxels << " voxels, n " << n << ", volume " << t;
          EXPECT_LE(got[t], want.sure[t] + want.borderline[t]) << voxels << " voxels, n " << n << ", volume " << t;
          total += got[t];
        }
        if (voxels > 100 && n > 30) {
          EXPECT_GT(total, 0) << "the spikes are found";
        }
      }
    }
  }
}

TEST(OutlierCount, NewestSlotOfARingEqualsItsEveryVolumeCount) {
  Device& device = test::test_device();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const size_t voxels = 17 * 13 * 5;
  const int slots = 24;
  const Series s = random_series(rng, voxels, slots);
  std::vector<uint8_t> mask(voxels, 1);
  DeviceBuffer<float> ring(device, s.flat.size());
  ring.write(device.queue(), s.flat);
  DeviceOutlierCount count(device, mask, 32);
  DeviceOutlierCount scratch_rows(device, mask, 32, int64_t{256} << 20, false);
  const std::vector<int64_t> every = count.count_every_volume(ring, slots);
  EXPECT_EQ(scratch_rows.count_every_volume(ring, slots), every) << "local rows and scratch rows: the same counts";
  for (const int newest : {0, 5, slots - 1}) {
    EXPECT_EQ(count.count_one_volume(ring, slots, newest), every[static_cast<size_t>(newest)]) << newest;
    EXPECT_EQ(scratch_rows.count_one_volume(ring, slots, newest), every[static_cast<size_t>(newest)]) << newest;
  }
  EXPECT_EQ(count.mask_voxels(), static_cast<int64_t>(voxels));
  EXPECT_THROW((void)count.count_one_volume(ring, slots, slots), std::invalid_argument);
  EXPECT_THROW((void)count.count_every_volume(ring, 33), std::invalid_argument) << "longer than max_slots";
  DeviceBuffer<float> short_buffer(device, voxels * 3);
  EXPECT_THROW((void)count.count_every_volume(short_buffer, 4), std::invalid_argument);
  DeviceOutlierCount empty(device, std::vector<uint8_t>(voxels, 0), 32);
  EXPECT_EQ(empty.count_every_volume(ring, slots), std::vector<int64_t>(slots, 0));
  EXPECT_THROW(DeviceOutlierCount(device, std::vector<uint8_t>{}, 4), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
