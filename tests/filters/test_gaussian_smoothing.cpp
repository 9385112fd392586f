// Gaussian smoothing: device (separable passes) against the direct 3D double-precision reference,
// on odd grids, anisotropic voxels, fresh random data, with and without a mask.
// ctest-label: gpu
// ctest-properties: PROCESSORS 2  (heavy device work: PoCL keeps every core busy)
#include <gtest/gtest.h>

#include <random>

#include "core/filters/gaussian_smoothing.hpp"
#include "core/filters/gaussian_taps.hpp"
#include "core/reference/smoothing_reference.hpp"
#include "sim/random_image.hpp"
#include "tests/support/compare.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

// float32 sums of a few dozen positive-weighted terms: relative error ~1e-6; allow 2e-5 of the data range.
constexpr double kTolerance = 2e-5 * 1000.0;

std::vector<uint8_t> random_mask(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution inside(0.7);
  std::vector<uint8_t> m(n);
  for (auto& v : m) v = inside(rng) ? 1 : 0;
  return m;
}

struct Case {
  std::array<int64_t, 3> dims;
  std::array<double, 3> voxel;
  double fwhm;
  int64_t volumes;
};

class SmoothingTest : public ::testing::TestWithParam<Case> {};

TEST_P(SmoothingTest, MatchesDirectReference) {
  const Case c = GetParam();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto img = sim::random_image({c.dims, c.volumes, c.voxel, 2.0, 0.0f, 1000.0f, seed});
  Device& dev = test::test_device();
  for (SmoothingPath path : {SmoothingPath::kSeparablePasses, SmoothingPath::kFused}) {
    SCOPED_TRACE(path == SmoothingPath::kFused ? "fused kernel" : "separable passes");
    GaussianSmoother smoother(dev, c.dims, c.voxel, {c.fwhm, 4.0, path}, std::nullopt, 2);
    ASSERT_EQ(smoother.fused(), path == SmoothingPath::kFused);
    const Image out = smoother.smooth(img);
    for (int64_t t = 0; t < c.volumes; ++t) {
      const auto ref = reference::smooth_volume(img.volume(t), c.dims, smoother.taps());
      const auto d = test::compare(out.volume(t), ref);
      EXPECT_EQ(d.non_finite, 0);
      EXPECT_LT(d.max_abs, kTolerance) << test::describe(d);
    }
  }
}

TEST_P(SmoothingTest, MaskedMatchesNormalisedConvolution) {
  const Case c = GetParam();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto img = sim::random_image({c.dims, c.volumes, c.voxel, 2.0, 0.0f, 1000.0f, seed});
  const auto mask = random_mask(static_cast<size_t>(img.header().voxels_per_volume()), seed + 1);
  Device& dev = test::test_device();
  GaussianSmoother smoother(dev, c.dims, c.voxel, {c.fwhm, 4.0}, std::span<const uint8_t>(mask), 3);
  const Image out = smoother.smooth(img);
  for (int64_t t = 0; t < c.volumes; ++t) {
    const auto ref = reference::smooth_volume(img.volume(t), c.dims, smoother.taps(), std::span<const uint8_t>(mask));
    const auto d = test::compare(out.volume(t), ref);
    EXPECT_EQ(d.non_finite, 0);
    EXPECT_LT(d.max_abs, kTolerance) << test::describe(d);
    for (size_t i = 0; i < mask.size(); ++i) {
      if (!mask[i]) {
        ASSERT_EQ(out.volume(t)[i], 0.0f) << "voxel outside mask at " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(OddGrids, SmoothingTest,
                         ::testing::Values(Case{{17, 13, 11}, {2.0, 2.5, 3.3}, 6.0, 3},
                                           Case{{31, 7, 5}, {3.0, 3.0, 3.0}, 8.0, 1},
                                           Case{{9, 21, 13}, {1.5, 2.0, 4.0}, 4.0, 5},
                                           Case{{7, 37, 41}, {2.0, 2.0, 2.5}, 6.0, 2},  // unrolled y/z blocks
                                           Case{{1, 1, 1}, {2.0, 2.0, 2.0}, 6.0, 1}),
                         [](const auto& param_info) {
                           const Case& c = param_info.param;
                           return std::to_string(c.dims[0]) + "x" + std::to_string(c.dims[1]) + "x" +
                                  std::to_string(c.dims[2]) + "x" + std::to_string(c.volumes);
                         });

TEST(Smoothing, ConstantImageStaysConstantUpToEdges) {
  // Edge renormalisation: a constant image must stay exactly constant everywhere, borders included.
  Device& dev = test::test_device();
  ImageHeader h;
  h.dims = {19, 15, 9};
  h.voxel_mm = {2.0, 2.0, 2.0};
  Image img(h, 123.0f);
  for (SmoothingPath path : {SmoothingPath::kSeparablePasses, SmoothingPath::kFused}) {
    GaussianSmoother smoother(dev, h.dims, h.voxel_mm, {6.0, 4.0, path});
    const Image out = smoother.smooth(img);
    for (float v : out.data()) ASSERT_NEAR(v, 123.0f, 1e-3f);
  }
}

TEST(Smoothing, ZeroFwhmIsIdentity) {
  Device& dev = test::test_device();
  auto img = sim::random_image({{11, 9, 7}, 1, {2.0, 2.0, 2.0}, 2.0, -5.0f, 5.0f, 7});
  GaussianSmoother smoother(dev, img.header().dims, img.header().voxel_mm, {0.0, 4.0});
  const Image out = smoother.smooth(img);
  EXPECT_EQ(out.data(), img.data());
}

TEST(Smoothing, FusedPathRulesAndFallback) {
  Device& dev = test::test_device();
  // Auto picks the fused kernel for unmasked smoothing with a small filter on a GPU...
  EXPECT_EQ(GaussianSmoother(dev, {20, 20, 20}, {3, 3, 3}, {6.0, 4.0}).fused(), dev.info().is_gpu());
  // ...and falls back to separable passes when the halo cannot fit in local memory.
  EXPECT_FALSE(GaussianSmoother(dev, {20, 20, 20}, {1, 1, 1}, {30.0, 4.0}).fused());
  EXPECT_THROW(GaussianSmoother(dev, {20, 20, 20}, {1, 1, 1}, {30.0, 4.0, SmoothingPath::kFused}),
               std::invalid_argument);
  std::vector<uint8_t> mask(20 * 20 * 20, 1);
  EXPECT_FALSE(GaussianSmoother(dev, {20, 20, 20}, {2, 2, 2}, {6.0, 4.0}, std::span<const uint8_t>(mask)).fused());
  // In-place smoothing is refused on the fused path rather than racing.
  GaussianSmoother fused(dev, {20, 20, 20}, {3, 3, 3}, {6.0, 4.0, SmoothingPath::kFused});
  DeviceBuffer<float> buf(dev, 8000);
  EXPECT_THROW(fused.enqueue(buf, buf, 1), std::invalid_argument);
}

TEST(Smoothing, RejectsBadArguments) {
  Device& dev = test::test_device();
  EXPECT_THROW(GaussianSmoother(dev, {0, 4, 4}, {2, 2, 2}, {6.0, 4.0}), std::invalid_argument);
  EXPECT_THROW(GaussianSmoother(dev, {4, 4, 4}, {2, 0, 2}, {6.0, 4.0}), std::invalid_argument);
  EXPECT_THROW(GaussianSmoother(dev, {4, 4, 4}, {2, 2, 2}, {-1.0, 4.0}), std::invalid_argument);
  std::vector<uint8_t> wrong_mask(10, 1);
  EXPECT_THROW(GaussianSmoother(dev, {4, 4, 4}, {2, 2, 2}, {6.0, 4.0}, std::span<const uint8_t>(wrong_mask)),
               std::invalid_argument);
}

TEST(GaussianTaps, FwhmToSigma) {
  EXPECT_NEAR(fwhm_to_sigma(2.0 * std::sqrt(2.0 * std::log(2.0))), 1.0, 1e-12);
  const auto taps = gaussian_taps(1.5, 3.0);
  EXPECT_EQ(taps.size(), 11u);  // R = ceil(4.5) = 5
  double sum = 0.0;
  for (double w : taps) sum += w;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_NEAR(taps[4] / taps[5], std::exp(-0.5 / (1.5 * 1.5)), 1e-12);
}

}  // namespace
}  // namespace rtf
