// ctest-label: gpu
// DeviceSortedSeries (both kernels: 32 work-items to a row in local memory, one work-item to a row) against
// DeviceOutlierCount (itself checked against the double reference in test_outlier_count):
// a ring of odd and even capacity turning over many more volumes than it holds, fresh random int16-like series (ties)
// with spikes, a NaN that enters a voxel's series and later leaves it, and a constant voxel (MAD 0): after every new
// volume the outlier count of the newest equals the full recount exactly (the same float arithmetic on the same
// values: tolerance 0), and the median volume equals series_medians bit for bit; clear() starts again; bad slots,
// short buffers and empty masks or rings are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/qa/outlier_count.hpp"
#include "core/qa/sorted_series.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

struct SeriesKernel {
  DeviceSortedSeries::Kernel kernel;
  int lanes;
};

class SortedSeriesKernels : public ::testing::TestWithParam<SeriesKernel> {};

TEST_P(SortedSeriesKernels, MatchesAFullRecountAsTheRingTurns) {
  Device& device = test::test_device();
  const DeviceSortedSeries::Kernel kernel = GetParam().kernel;
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> base(800.0f, 150.0f), noise(0.0f, 20.0f), spike(0.0f, 400.0f);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  const size_t voxels = 19 * 11 * 5;
  for (const int capacity : {13, 16, 71}) {  // 71: several entries to each of the shared kernel's lanes
    std::vector<uint8_t> mask(voxels);
    std::bernoulli_distribution inside(0.8);
    for (auto& m : mask) m = inside(rng) ? 1 : 0;
    mask[1] = mask[2] = 1;
    std::vector<float> mean(voxels);
    for (float& m : mean) m = std::round(base(rng));
    DeviceBuffer<float> ring(device, voxels * static_cast<size_t>(capacity));
    ring.write(device.queue(), std::vector<float>(voxels * static_cast<size_t>(capacity), 0.0f));
    DeviceSortedSeries sorted(device, mask, capacity, kernel, GetParam().lanes);
    ASSERT_EQ(sorted.shared_rows(), kernel == DeviceSortedSeries::Kernel::kShared);
    DeviceOutlierCount recount(device, mask, capacity, int64_t{256} << 20, false);
    DeviceBuffer<float> median(device, voxels), recounted_median(device, voxels);
    median.fill(device.queue(), 0.0f);
    recounted_median.fill(device.queue(), 0.0f);
    for (int t = 0; t < 3 * capacity + 5; ++t) {
      if (t == 2 * capacity) sorted.clear();  // starts again: the series are filled from the ring's slots below
      std::vector<float> volume(voxels);
      for (size_t v = 0; v < voxels; ++v) {
        volume[v] = std::round(mean[v] + noise(rng));
        if (u(rng) < 0.02f) volume[v] += std::round(spike(rng));
      }
      volume[2] = t == 3 ? 900.0f : 500.0f;   // mostly constant: MAD 0, never an outlier
      if (t == 5) volume[1] = std::nanf("");  // voxel 1 is left out while its series holds the NaN
      const int slot = t % capacity;
      ring.write(device.queue(), volume, static_cast<size_t>(slot) * voxels);
      const int slots = std::min(t + 1, capacity);
      if (t == 2 * capacity) {  // after clear(): every slot but the newest joins first
        for (int s = 0; s < capacity; ++s) {
          if (s != slot) sorted.enqueue_replace(ring, s, false);
        }
      }
      sorted.enqueue_replace(ring, slot, true);
      RTF_CL_CHECK(clFinish(device.queue()));
      ASSERT_EQ(sorted.held(), slots) << "volume " << t;
      EXPECT_EQ(sorted.outliers_result(), recount.count_one_volume(ring, slots, slot))
          << "capacity " << capacity << ", volume " << t;
      sorted.enqueue_medians(median);
      recount.medians(ring, slots, recounted_median);
      const std::vector<float> got = median.read_all(device.queue()), want = recounted_median.read_all(device.queue());
      for (size_t v = 0; v < voxels; ++v) {
        if (std::isnan(want[v])) {
          EXPECT_TRUE(std::isnan(got[v])) << "voxel " << v << ", volume " << t;
        } else {
          ASSERT_EQ(got[v], want[v]) << "voxel " << v << ", volume " << t;
        }
      }
      if (t >= 5 && t < 5 + capacity && t != 2 * capacity) {
        EXPECT_TRUE(std::isnan(got[1])) << "the NaN is in voxel 1's series at volume " << t;
      }
    }
  }
}

// The per-item kernel, and the shared one with 32, 8 and 4 work-items a row (a row then spans one group's 4 or 32).
INSTANTIATE_TEST_SUITE_P(BothKernels, SortedSeriesKernels,
                         ::testing::Values(SeriesKernel{DeviceSortedSeries::Kernel::kPerItem, 32},
                                           SeriesKernel{DeviceSortedSeries::Kernel::kShared, 32},
                                           SeriesKernel{DeviceSortedSeries::Kernel::kShared, 8},
                                           SeriesKernel{DeviceSortedSeries::Kernel::kShared, 4}),
                         [](const auto& param_info) {
                           return param_info.param.kernel == DeviceSortedSeries::Kernel::kShared
                                      ? "Shared" + std::to_string(param_info.param.lanes)
                                      : std::string("PerItem");
                         });

TEST(SortedSeries, RefusesBadUse) {
  Device& device = test::test_device();
  const std::vector<uint8_t> mask(10, 1);
  DeviceSortedSeries sorted(device, mask, 4);
  DeviceBuffer<float> ring(device, 40), short_ring(device, 25);
  EXPECT_THROW(sorted.enqueue_replace(ring, 4, false), std::invalid_argument);
  EXPECT_THROW(sorted.enqueue_replace(ring, -1, false), std::invalid_argument);
  EXPECT_THROW(sorted.enqueue_replace(short_ring, 2, false), std::invalid_argument);
  EXPECT_THROW((void)sorted.outliers_result(), std::logic_error);
  DeviceBuffer<float> small(device, 5);
  EXPECT_THROW(sorted.enqueue_medians(small), std::invalid_argument);
  EXPECT_THROW(DeviceSortedSeries(device, mask, 0), std::invalid_argument);
  EXPECT_THROW(DeviceSortedSeries(device, std::vector<uint8_t>{}, 4), std::invalid_argument);
  EXPECT_THROW(DeviceSortedSeries(device, mask, 4, DeviceSortedSeries::Kernel::kShared, 6), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
