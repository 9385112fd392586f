// The decoders' device kernels against their double references (core/reference/decoding_reference.hpp) on odd sizes
// and fresh random data: the per-run features (detrended by the Detrender, z-scored, gathered into the sample rows;
// constant features; NaNs refused; more than the device holds refused with the figures), the Gram matrix X X^T (sizes
// across the tile and segment boundaries) and the back-projection X^T beta.
// ctest-label: gpu
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/decoding/feature_weights.hpp"
#include "core/decoding/gram_matrix.hpp"
#include "core/decoding/sample_features.hpp"
#include "core/reference/decoding_reference.hpp"
#include "core/temporal/detrend_basis.hpp"
#include "sim/random_image.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

std::vector<float> random_floats(size_t count, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(count);
  for (float& x : v) x = normal(rng);
  return v;
}

DeviceBuffer<float> upload(const std::vector<float>& v) {
  Device& dev = test::test_device();
  DeviceBuffer<float> b(dev, v.size());
  b.write(dev.queue(), v);
  return b;
}

// Products exact in double, sums of up to 5003 terms of size ~1: the device's order of additions differs from the
// reference's by rounding of ~p * 1e-16 relative; allow 1e-12 relative to the largest element.
TEST(GramMatrix, EqualsTheReferenceOnOddSizes) {
  uint64_t seed = 11;
  for (const auto& [n, p] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {17, 33}, {45, 1000}, {33, 5003}}) {
    const std::vector<float> x = random_floats(static_cast<size_t>(n * p), ++seed);
    const Eigen::MatrixXd k = gram_matrix(test::test_device(), upload(x), n, p);
    const Eigen::MatrixXd ref = reference::gram(x, n, p);
    const double scale = ref.cwiseAbs().maxCoeff();
    EXPECT_LE((k - ref).cwiseAbs().maxCoeff(), 1e-12 * scale) << n << " x " << p;
    EXPECT_TRUE(k.allFinite());
  }
}

TEST(GramMatrix, RefusesSizesThatDoNotMatch) {
  const std::vector<float> x = random_floats(10, 3);
  EXPECT_THROW(gram_matrix(test::test_device(), upload(x), 3, 4), std::invalid_argument);
  EXPECT_THROW(gram_matrix(test::test_device(), upload(x), 0, 4), std::invalid_argument);
}

// Sums of n products in double: 1e-12 relative to the largest weight.
TEST(FeatureWeights, EqualsTheReferenceOnOddSizes) {
  uint64_t seed = 40;
  for (const auto& [n, p, m] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 1, 1}, {19, 63, 1}, {40, 1001, 3}, {7, 130, 5}}) {
    const std::vector<float> x = random_floats(static_cast<size_t>(n * p), ++seed);
    std::mt19937_64 rng(seed * 7);
    std::normal_distribution<double> normal;
    Eigen::MatrixXd beta(n, m);
    for (Eigen::Index i = 0; i < beta.size(); ++i) beta.data()[i] = normal(rng);
    const Eigen::MatrixXd w = feature_weights(test::test_device(), upload(x), n, p, beta);
    const Eigen::MatrixXd ref = reference::back_projection(x, n, p, beta);
    ASSERT_EQ(w.rows(), p);
    ASSERT_EQ(w.cols(), m);
    EXPECT_LE((w - ref).cwiseAbs().maxCoeff(), 1e-12 * ref.cwiseAbs().maxCoeff()) << n << " x " << p << " x " << m;
  }
  EXPECT_THROW(feature_weights(test::test_device(), upload(random_floats(6, 1)), 2, 3, Eigen::MatrixXd::Zero(3, 1)),
               std::invalid_argument);
}

// Two runs of different lengths on a 7 x 5 x 3 grid, every other volume a sample, mixed with some voxels held constant
// in one run; the features of 40 of the voxels.
struct Runs {
  std::vector<Image> images;
  std::vector<int> voxels;
  DecodingSamples samples;
};

Runs two_runs(uint64_t seed) {
  Runs r;
  for (int64_t nt : {23, 31}) {
    Image img = sim::random_image({{7, 5, 3}, nt, {3.0, 3.0, 3.0}, 2.0, 100.0f, 900.0f, seed++});
    // Slow drifts to remove, and voxel 4 constant in the first run.
    for (int64_t t = 0; t < nt; ++t) {
      for (int64_t v = 0; v < 105; ++v) img.volume(t)[static_cast<size_t>(v)] += static_cast<float>(3.0 * t * (v % 5));
      if (r.images.empty()) img.volume(t)[4] = 250.0f;
    }
    r.images.push_back(std::move(img));
  }
  for (int v = 0; v < 105; v += 2) {
    if (r.voxels.size() < 40) r.voxels.push_back(v);
  }
  r.samples.classes = {"a", "b"};
  for (int run = 0; run < 2; ++run) {
    for (int t = 1; t < r.images[static_cast<size_t>(run)].nt(); t += 2) {
      r.samples.run.push_back(run);
      r.samples.volume.push_back(t);
      r.samples.label.push_back(t % 4 == 1 ? 0 : 1);
      r.samples.block.push_back(0);
    }
  }
  return r;
}

std::vector<double> reference_features(const Runs& r, const FeatureOptions& o) {
  const auto p = static_cast<int64_t>(r.voxels.size());
  std::vector<double> x(r.samples.size() * static_cast<size_t>(p), std::numeric_limits<double>::quiet_NaN());
  for (size_t run = 0; run < r.images.size(); ++run) {
    const Image& img = r.images[run];
    std::vector<float> series(static_cast<size_t>(img.nt() * p));
    for (int64_t t = 0; t < img.nt(); ++t) {
      for (int64_t f = 0; f < p; ++f)
        series[static_cast<size_t>(t * p + f)] = img.volume(t)[static_cast<size_t>(r.voxels[static_cast<size_t>(f)])];
    }
    std::vector<int> rows(static_cast<size_t>(img.nt()), -1);
    for (size_t i = 0; i < r.samples.size(); ++i) {
      if (r.samples.run[i] == static_cast<int>(run))
        rows[static_cast<size_t>(r.samples.volume[i])] = static_cast<int>(i);
    }
    const Eigen::MatrixXd design =
        o.poly_order || o.highpass_cutoff_s
            ? detrend_design(img.nt(), img.header().tr_s, {o.poly_order, o.highpass_cutoff_s, true})
            : Eigen::MatrixXd();
    reference::decoding_features(series, p, design, rows, o.zscore, x);
  }
  return x;
}

// Raw values of ~1000 with drifts: the float detrending leaves ~1e-4 absolute error (test_detrend.cpp's bound,
// 1.5e-3 on a data scale of 1000), divided by the residual's SD (~230): z-scores within 2e-5; allow 5e-5.
TEST(SampleFeatures, EqualTheReferenceForEachDetrendingAndScaling) {
  const Runs r = two_runs(70);
  std::vector<const Image*> pointers{&r.images[0], &r.images[1]};
  const std::vector<FeatureOptions> options{
      {1, std::nullopt, true}, {3, 40.0, true}, {std::nullopt, std::nullopt, true}, {2, std::nullopt, false}};
  for (const FeatureOptions& o : options) {
    const SampleFeatures x = sample_features(test::test_device(), pointers, r.voxels, r.samples, o);
    ASSERT_EQ(x.samples, static_cast<int64_t>(r.samples.size()));
    ASSERT_EQ(x.features, 40);
    EXPECT_EQ(x.constant_features, 1);  // voxel 4, feature 2, in run 1
    const std::vector<float> got = x.x.read_all(test::test_device().queue());
    const std::vector<double> want = reference_features(r, o);
    const double tolerance = o.zscore ? 5e-5 : 2e-3;
    double worst = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << i;
      worst = std::max(worst, std::abs(got[i] - want[i]));
    }
    EXPECT_LE(worst, tolerance) << "poly " << o.poly_order.value_or(-1) << " zscore " << o.zscore;
    EXPECT_EQ(got[2], 0.0f);  // the constant feature of run 1's first sample
  }
}

TEST(SampleFeatures, RefusesNaNsAndDataTheDeviceCannotHold) {
  Runs r = two_runs(90);
  r.images[1].volume(5)[static_cast<size_t>(r.voxels[7])] = std::numeric_limits<float>::quiet_NaN();
  std::vector<const Image*> pointers{&r.images[0], &r.images[1]};
  try {
    sample_features(test::test_device(), pointers, r.voxels, r.samples, {});
    FAIL() << "a NaN was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("run 2: volume 5 has nan"), std::string::npos) << e.what();
  }
  // 10^6 samples x 10^6 features: 4 TB, refused with the figure before anything is allocated.
  DecodingSamples huge = r.samples;
  huge.run.assign(1000000, 0);
  huge.volume.assign(1000000, 0);
  huge.label.assign(1000000, 0);
  huge.block.assign(1000000, 0);
  std::vector<int> voxels(1000000, 0);
  try {
    sample_features(test::test_device(), pointers, voxels, huge, {});
    FAIL() << "4 TB of features were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("MiB on the device"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sample_features(test::test_device(), pointers, {}, r.samples, {}), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
