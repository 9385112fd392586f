// ctest-label: gpu
// DeviceDvars against the host definition rtf::dvars on odd sizes, fresh random volumes with NaN and Inf voxels and a
// random mask: the first call is NaN, each later one equals dvars(previous, current, mask) within 1e-5 relative
// (float partial sums over ~100 voxels per work-item, added in double); an empty mask gives 0, a mask whose voxels
// all differ by NaN gives NaN; a volume smaller than the mask is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/motion/device_dvars.hpp"
#include "core/motion/motion_metrics.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

TEST(DeviceDvars, MatchesTheHostDefinitionOnRandomVolumes) {
  Device& device = test::test_device();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const size_t n : {size_t{1}, size_t{257}, size_t{19 * 23 * 17}, size_t{61 * 59 * 31}}) {
    std::vector<uint8_t> mask(n);
    std::bernoulli_distribution inside(0.7);
    for (auto& m : mask) m = inside(rng) ? 1 : 0;
    DeviceDvars dvars_device(device, mask);
    DeviceBuffer<float> buffer(device, n);
    std::normal_distribution<float> value(800.0f, 60.0f);
    std::uniform_int_distribution<size_t> pick(0, n - 1);
    std::vector<float> previous;
    for (int t = 0; t < 4; ++t) {
      std::vector<float> volume(n);
      for (float& v : volume) v = value(rng);
      for (size_t k = 0; k < n / 500; ++k) volume[pick(rng)] = std::nanf("");
      if (n > 1) volume[pick(rng)] = INFINITY;
      buffer.write(device.queue(), volume);
      const double got = dvars_device.next(buffer);
      if (t == 0) {
        EXPECT_TRUE(std::isnan(got)) << "the first volume has no previous one";
      } else {
        const double want = dvars(previous, volume, mask);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got)) << n;
        } else {
          EXPECT_NEAR(got, want, 1e-5 * want) << "n " << n << " volume " << t;
        }
      }
      previous = volume;
    }
  }
}

TEST(DeviceDvars, EmptyMaskAllNaNAndBadSizes) {
  Device& device = test::test_device();
  const size_t n = 333;
  DeviceBuffer<float> buffer(device, n);
  buffer.write(device.queue(), std::vector<float>(n, 1.0f));
  DeviceDvars empty(device, std::vector<uint8_t>(n, 0));
  (void)empty.next(buffer);
  EXPECT_EQ(empty.next(buffer), 0.0);
  DeviceDvars full(device, std::vector<uint8_t>(n, 1));
  (void)full.next(buffer);
  EXPECT_EQ(full.next(buffer), 0.0);  // no change
  buffer.write(device.queue(), std::vector<float>(n, std::nanf("")));
  EXPECT_TRUE(std::isnan(full.next(buffer)));
  DeviceBuffer<float> small(device, n - 1);
  EXPECT_THROW((void)full.next(small), std::invalid_argument);
  EXPECT_THROW(DeviceDvars(device, std::vector<uint8_t>{}), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
