// Brain mask and device sum: device against the double-precision reference on odd grids with a
// bright ellipsoid "brain" in noise; the temporal mean on threads bit for bit the ordered sum; bad input rejected.
// ctest-label: gpu
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/filters/device_reduce.hpp"
#include "core/filters/gaussian_taps.hpp"
#include "core/mask/brain_mask.hpp"
#include "core/reference/brain_mask_reference.hpp"
#include "sim/random_image.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

// An ellipsoid of intensity ~800 in background ~50, plus uniform noise, nt volumes.
Image blob_series(std::array<int64_t, 3> dims, int64_t nt, uint64_t seed) {
  auto img = sim::random_image({dims, nt, {3.0, 3.0, 3.5}, 2.0, 0.0f, 60.0f, seed});
  for (int64_t t = 0; t < nt; ++t)
    for (int64_t z = 0; z < dims[2]; ++z)
      for (int64_t y = 0; y < dims[1]; ++y)
        for (int64_t x = 0; x < dims[0]; ++x) {
          const double u = (x - dims[0] / 2.0) / (dims[0] * 0.35), v = (y - dims[1] / 2.0) / (dims[1] * 0.4),
                       w = (z - dims[2] / 2.0) / (dims[2] * 0.4);
          if (u * u + v * v + w * w < 1.0) img.at(x, y, z, t) += 750.0f;
        }
  return img;
}

std::array<std::vector<double>, 3> taps_for(const ImageHeader& h, double fwhm) {
  std::array<std::vector<double>, 3> taps;
  for (int a = 0; a < 3; ++a) taps[a] = gaussian_taps(fwhm_to_sigma(fwhm) / h.voxel_mm[a], 4.0);
  return taps;
}

TEST(BrainMask, MatchesReferenceAwayFromThreshold) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const Image series = blob_series({23, 19, 13}, 3, seed);
  const BrainMaskSpec spec{4.0, 0.9, 1};
  const BrainMask mask = compute_brain_mask(test::test_device(), series, spec);
  const auto ref = reference::brain_mask(series.extract_volume(1), taps_for(series.header(), 4.0), 0.9);
  EXPECT_NEAR(mask.threshold, ref.threshold, 1e-5 * ref.threshold);
  ASSERT_EQ(mask.inside.size(), ref.inside.size());
  int64_t inside = 0;
  for (size_t i = 0; i < ref.inside.size(); ++i) {
    inside += ref.inside[i];
    // float vs double may disagree only for voxels within 1e-4 (relative) of the threshold.
    if (std::abs(ref.smoothed[i] - ref.threshold) > 1e-4 * ref.threshold) {
      ASSERT_EQ(mask.inside[i], ref.inside[i]) << "voxel " << i << " smoothed " << ref.smoothed[i];
    }
  }
  EXPECT_GT(inside, 100);                                          // the blob is found...
  EXPECT_LT(inside, static_cast<int64_t>(ref.inside.size()) / 2);  // ...and the background is not
  EXPECT_EQ(mask.count, std::count(mask.inside.begin(), mask.inside.end(), uint8_t{1}));
}

TEST(BrainMask, TemporalMeanSource) {
  const Image series = blob_series({15, 11, 9}, 4, 5);
  const Image mean = mask_source_volume(series, -1);
  for (int64_t i = 0; i < mean.header().voxels_per_volume(); ++i) {
    double s = 0.0;
    for (int64_t t = 0; t < 4; ++t) s += series.volume(t)[static_cast<size_t>(i)];
    ASSERT_NEAR(mean.data()[static_cast<size_t>(i)], s / 4.0, 1e-3);
  }
  const BrainMask mask = compute_brain_mask(test::test_device(), series, {4.0, 0.9, -1});
  EXPECT_GT(mask.count, 0);
}

// A series large enough to be summed on several threads (each its own voxels): the mean the same, bit for bit, as the
// one-threaded sum in double over the volumes in order.
TEST(BrainMask, TemporalMeanOnThreadsIsTheOrderedSum) {
  const Image series = blob_series({37, 29, 23}, 47, 11);  // 1.16 M values
  const Image mean = mask_source_volume(series, -1);
  const auto nvox = static_cast<size_t>(series.header().voxels_per_volume());
  for (size_t i = 0; i < nvox; ++i) {
    double s = 0.0;
    for (int64_t t = 0; t < series.nt(); ++t) s += series.volume(t)[i];
    const auto want = static_cast<float>(s / static_cast<double>(series.nt()));
    ASSERT_EQ(std::memcmp(&mean.data()[i], &want, sizeof(float)), 0) << "voxel " << i;
  }
}

TEST(BrainMask, RejectsBadInput) {
  Image series = blob_series({9, 7, 5}, 2, 3);
  EXPECT_THROW(compute_brain_mask(test::test_device(), series, {4.0, 0.9, 2}), std::invalid_argument);
  EXPECT_THROW(compute_brain_mask(test::test_device(), series, {4.0, 0.0, 0}), std::invalid_argument);
  series.at(3, 3, 3, 0) = std::nanf("");
  EXPECT_THROW(compute_brain_mask(test::test_device(), series, {4.0, 0.9, 0}), std::invalid_argument);
}

TEST(DeviceSum, MatchesDoubleSumOnOddLengths) {
  Device& dev = test::test_device();
  DeviceSum summer(dev);
  for (size_t n : {size_t{1}, size_t{255}, size_t{1001}, size_t{100003}}) {
    auto img = sim::random_image({{static_cast<int64_t>(n), 1, 1}, 1, {1, 1, 1}, 1.0, -1.0f, 3.0f, n});
    DeviceBuffer<float> buf(dev, n + 7);
    buf.fill(dev.queue(), 1e30f);  // elements past n must not be summed
    buf.write(dev.queue(), img.data());
    double ref = 0.0;
    for (float v : img.data()) ref += v;
    EXPECT_NEAR(summer.sum(buf, n), ref, 1e-5 * static_cast<double>(n)) << "n=" << n;
  }
}

}  // namespace
}  // namespace rtf
