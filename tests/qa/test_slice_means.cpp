// ctest-label: gpu
// DeviceSliceMeans against the double reference (reference::slice_means) on odd grids with fresh random BOLD-like
// volumes, a random mask, NaN and Inf voxels and a slice with no masked voxel: every slice mean and the global signal
// within 1e-6 relative (float sums of a work-item's few voxels, added in double); a slice without voxels is
// NaN, an empty mask gives a NaN global signal; a mask or volume of the wrong size is refused.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/qa/slice_means.hpp"
#include "core/reference/qa_reference.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

void expect_same(const SliceMeans& got, const reference::SliceMeans& want, const std::string& where) {
  ASSERT_EQ(got.slice.size(), want.slice.size()) << where;
  for (size_t z = 0; z < want.slice.size(); ++z) {
    if (std::isnan(want.slice[z])) {
      EXPECT_TRUE(std::isnan(got.slice[z])) << where << " slice " << z;
    } else {
      EXPECT_NEAR(got.slice[z], want.slice[z], 1e-6 * std::abs(want.slice[z])) << where << " slice " << z;
    }
  }
  if (std::isnan(want.global)) {
    EXPECT_TRUE(std::isnan(got.global)) << where;
  } else {
    EXPECT_NEAR(got.global, want.global, 1e-6 * std::abs(want.global)) << where;
  }
}

TEST(SliceMeans, MatchTheReferenceOnRandomVolumes) {
  Device& device = test::test_device();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const std::array<int64_t, 3> dims : {std::array<int64_t, 3>{1, 1, 1}, std::array<int64_t, 3>{7, 5, 3},
                                            std::array<int64_t, 3>{37, 41, 13}, std::array<int64_t, 3>{64, 64, 33}}) {
    const auto n = static_cast<size_t>(dims[0] * dims[1] * dims[2]);
    std::vector<uint8_t> mask(n);
    std::bernoulli_distribution inside(0.6);
    for (auto& m : mask) m = inside(rng) ? 1 : 0;
    if (dims[2] > 1) {  // the last slice has no masked voxel
      std::fill(mask.end() - static_cast<std::ptrdiff_t>(dims[0] * dims[1]), mask.end(), 0);
    }
    DeviceSliceMeans means(device, dims, mask);
    DeviceBuffer<float> buffer(device, n);
    std::normal_distribution<float> value(800.0f, 150.0f);
    std::uniform_int_distribution<size_t> pick(0, n - 1);
    for (int t = 0; t < 3; ++t) {
      std::vector<float> volume(n);
      for (float& v : volume) v = value(rng);
      for (size_t k = 0; k < n / 300; ++k) volume[pick(rng)] = std::nanf("");
      if (n > 10) volume[pick(rng)] = -INFINITY;
      buffer.write(device.queue(), volume);
      expect_same(means.measure(buffer), reference::slice_means(volume, dims, mask),
                  fmt::format("{}x{}x{} volume {}", dims[0], dims[1], dims[2], t));
    }
  }
}

TEST(SliceMeans, EmptyMaskAndBadSizes) {
  Device& device = test::test_device();
  const std::array<int64_t, 3> dims{4, 3, 2};
  DeviceSliceMeans empty(device, dims, std::vector<uint8_t>(24, 0));
  DeviceBuffer<float> buffer(device, 24);
  buffer.write(device.queue(), std::vector<float>(24, 3.0f));
  const SliceMeans got = empty.measure(buffer);
  EXPECT_TRUE(std::isnan(got.global));
  EXPECT_TRUE(std::isnan(got.slice[0]) && std::isnan(got.slice[1]));
  EXPECT_THROW(DeviceSliceMeans(device, dims, std::vector<uint8_t>(23, 1)), std::invalid_argument);
  EXPECT_THROW(DeviceSliceMeans(device, {0, 3, 2}, std::vector<uint8_t>{}), std::invalid_argument);
  DeviceSliceMeans means(device, dims, std::vector<uint8_t>(24, 1));
  DeviceBuffer<float> small(device, 23);
  EXPECT_THROW((void)means.measure(small), std::invalid_argument);
  const SliceMeans ones = means.measure(buffer);
  EXPECT_DOUBLE_EQ(ones.global, 3.0);
  EXPECT_DOUBLE_EQ(ones.slice[1], 3.0);
}

}  // namespace
}  // namespace rtf
