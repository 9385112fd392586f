// ctest-label: gpu
// DeviceMaskedMedian (the masked values sorted on the device, the middle of the finite ones read) against the host's
// median_in_mask, exactly (the same two floats averaged in double), on odd grids with fresh random masks and values of
// both signs, ties, both zeros, NaN and infinities of both signs; odd and even finite counts; one tile and several
// (runs merged 8 and 2 at a time); no finite value: NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "core/qa/masked_median.hpp"
#include "core/qa/qa_outputs.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

TEST(MaskedMedian, EqualsTheHostMedianOfTheFiniteMaskedValues) {
  Device& device = test::test_device();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> value(40.0f, 30.0f);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const size_t voxels : {size_t{7 * 5 * 3}, size_t{23 * 19 * 11}}) {  // one tile; five tiles of 1,024
    for (const int ways : {8, 2}) {
      for (int trial = 0; trial < 4; ++trial) {
        std::vector<uint8_t> mask(voxels);
        std::vector<float> map(voxels);
        for (size_t v = 0; v < voxels; ++v) {
          mask[v] = u(rng) < 0.7f ? 1 : 0;
          const float r = u(rng);
          map[v] = r < 0.03f   ? nan
                   : r < 0.05f ? -nan
                   : r < 0.07f ? inf
                   : r < 0.08f ? -inf
                   : r < 0.1f  ? (u(rng) < 0.5f ? 0.0f : -0.0f)
                   : r < 0.4f  ? std::round(value(rng))  // ties
                               : value(rng);
        }
        if (trial == 1) mask[0] = mask[0] == 0 ? 1 : 0;  // the finite count's parity changes between trials
        DeviceBuffer<float> volume(device, voxels);
        volume.write(device.queue(), map);
        DeviceMaskedMedian median(device, mask, ways);
        const double want = median_in_mask(map, mask);
        const double got = median.median(volume);
        EXPECT_EQ(got, want) << voxels << " voxels, ways " << ways << ", trial " << trial;
      }
    }
  }
}

TEST(MaskedMedian, NoFiniteValueIsNaN) {
  Device& device = test::test_device();
  const std::vector<uint8_t> mask{1, 1, 0, 1};
  DeviceBuffer<float> volume(device, 4);
  volume.write(device.queue(),
               std::vector<float>{std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 5.0f,
                                  -std::numeric_limits<float>::infinity()});
  DeviceMaskedMedian median(device, mask);
  EXPECT_TRUE(std::isnan(median.median(volume)));
  volume.write(device.queue(), std::vector<float>{3.0f, 1.0f, 100.0f, 2.0f});
  EXPECT_EQ(median.median(volume), 2.0);
  EXPECT_THROW(DeviceMaskedMedian(device, std::vector<uint8_t>{}), std::invalid_argument);
  DeviceMaskedMedian unused(device, mask);
  EXPECT_THROW((void)unused.result(), std::logic_error);
}

}  // namespace
}  // namespace rtf
