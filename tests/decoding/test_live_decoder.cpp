// The live decoder on the device against the double reference (reference::live_decision: an explicit least-squares
// fit over the run so far for every volume) on odd sizes and fresh random data with drifts: every preprocessing
// (line and SD, mean and SD, line and a fixed scale, none), 1 and 3 decision functions, every volume of two runs; at
// a run's last volume the decision equals the offline features' (the whole run's detrending and z-scoring); a model
// on another grid or with a preprocessing the live path cannot reproduce is refused.
// ctest-label: gpu
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/decoding/live_decoder.hpp"
#include "core/reference/decoding_reference.hpp"
#include "core/temporal/detrend_basis.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

constexpr int64_t kNx = 9, kNy = 7, kNz = 5, kVolume = kNx * kNy * kNz;

ImageHeader grid() {
  ImageHeader h;
  h.dims = {kNx, kNy, kNz};
  h.voxel_mm = {3.0, 3.0, 3.5};
  h.affine = Eigen::Matrix4d::Identity();
  h.affine.diagonal() << 3.0, 3.0, 3.5, 1.0;
  h.affine(0, 3) = -12.0;
  h.num_volumes = 1;
  return h;
}

DecoderModelFile random_model(int classes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  DecoderModelFile m;
  m.model = DecoderModel::kLogistic;
  for (int c = 0; c < classes; ++c) m.classes.push_back(std::string(1, static_cast<char>('a' + c)));
  m.dims = {kNx, kNy, kNz};
  m.affine = grid().affine;
  for (int v = 3; v < kVolume; v += 2) m.voxels.push_back(v);  // 156 features: two work-groups, the second partial
  const int functions = classes == 2 ? 1 : classes;
  m.coef.resize(m.features(), functions);
  for (Eigen::Index i = 0; i < m.coef.size(); ++i) m.coef.data()[i] = normal(rng);
  m.intercept = Eigen::VectorXd::Random(functions);
  m.feature_mean.resize(static_cast<size_t>(m.features()));
  m.feature_scale.resize(static_cast<size_t>(m.features()));
  for (size_t f = 0; f < m.feature_mean.size(); ++f) {
    m.feature_mean[f] = normal(rng);
    m.feature_scale[f] = 5.0 + std::abs(normal(rng));
  }
  return m;
}

// `volumes` volumes of values ~1000 with a per-voxel drift and noise.
std::vector<float> random_run(int64_t volumes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> slope(kVolume), run(static_cast<size_t>(volumes * kVolume));
  for (float& s : slope) s = 2.0f * normal(rng);
  for (int64_t t = 0; t < volumes; ++t) {
    for (int64_t v = 0; v < kVolume; ++v) {
      run[static_cast<size_t>(t * kVolume + v)] =
          1000.0f + slope[static_cast<size_t>(v)] * static_cast<float>(t) + 10.0f * normal(rng);
    }
  }
  return run;
}

struct Case {
  std::optional<int> poly;
  FeatureScaling scaling;
  int detrend, scale;  // the reference's
};

// Sums of ~150 products of z ~ 1 and weights ~ 1, each z from double sums over up to 40 values of ~1000: rounding of
// ~1e-13 relative in the running sums, amplified by the line's fit; allow 1e-9 of the decisions' scale (~10).
TEST(LiveDecoder, EqualsTheReferenceOnEveryVolumeOfTwoRuns) {
  const std::vector<Case> cases{{1, FeatureScaling::kPerRun, 1, 1},
                                {0, FeatureScaling::kPerRun, 0, 1},
                                {1, FeatureScaling::kFeatureScale, 1, 2},
                                {std::nullopt, FeatureScaling::kNone, -1, 0},
                                {std::nullopt, FeatureScaling::kPerRun, 0, 1}};
  Device& dev = test::test_device();
  uint64_t seed = 3;
  for (const int classes : {2, 3}) {
    for (const Case& c : cases) {
      DecoderModelFile m = random_model(classes, ++seed);
      m.detrend_poly_order = c.poly;
      m.scaling = c.scaling;
      LiveDecoder decoder(dev, m, grid());
      for (const int64_t length : {23, 40}) {
        const std::vector<float> run = random_run(length, ++seed);
        DeviceBuffer<float> ring(dev, run.size());
        ring.write(dev.queue(), run);
        decoder.start_run();
        for (int64_t t = 0; t < length; ++t) {
          decoder.enqueue(ring, static_cast<size_t>(t * kVolume));
          const LiveDecision d = decoder.read();
          ASSERT_EQ(d.volume, t);
          EXPECT_EQ(d.ready, t + 1 >= decoder.warm_up_volumes());
          const std::vector<double> want = reference::live_decision(
              std::span<const float>(run.data(), static_cast<size_t>((t + 1) * kVolume)), kVolume, m.voxels, m.coef,
              m.intercept, c.detrend, c.scale, m.feature_mean, m.feature_scale);
          ASSERT_EQ(d.decision.size(), want.size());
          for (size_t k = 0; k < want.size(); ++k) {
            EXPECT_NEAR(d.decision[k], want[k], 1e-9 * std::max(10.0, std::abs(want[k])))
                << "classes " << classes << " detrend " << c.detrend << " scale " << c.scale << " t " << t;
          }
          EXPECT_EQ(d.probability.size(), static_cast<size_t>(classes));
        }
      }
    }
  }
}

// At the last volume the line and SD over the run so far are the whole run's: the offline features of that volume
// (reference::decoding_features with the Legendre order-1 design) give the same decision.
TEST(LiveDecoder, TheLastVolumeDecidesAsTheOfflineFeatures) {
  Device& dev = test::test_device();
  const DecoderModelFile m = random_model(2, 99);
  LiveDecoder decoder(dev, m, grid());
  const int64_t length = 31;
  const std::vector<float> run = random_run(length, 100);
  DeviceBuffer<float> ring(dev, run.size());
  ring.write(dev.queue(), run);
  for (int64_t t = 0; t < length; ++t) decoder.enqueue(ring, static_cast<size_t>(t * kVolume));
  const LiveDecision d = decoder.read();
  const auto p = m.features();
  std::vector<float> series(static_cast<size_t>(length * p));
  for (int64_t t = 0; t < length; ++t) {
    for (int64_t f = 0; f < p; ++f) {
      series[static_cast<size_t>(t * p + f)] = run[static_cast<size_t>(t * kVolume + m.voxels[static_cast<size_t>(f)])];
    }
  }
  std::vector<int> rows(static_cast<size_t>(length), -1);
  rows.back() = 0;
  std::vector<double> x(static_cast<size_t>(p));
  reference::decoding_features(series, p, detrend_design(length, 2.0, {1, std::nullopt, true}), rows, true, x);
  const double offline = m.intercept[0] + Eigen::Map<const Eigen::VectorXd>(x.data(), p).dot(m.coef.col(0));
  EXPECT_NEAR(d.decision[0], offline, 1e-9 * std::max(10.0, std::abs(offline)));
}

// A NaN in a feature voxel makes the decision NaN from that volume on, for every scaling (never silently 0), so that
// the live stage can say the decoder is off.
TEST(LiveDecoder, ANanInAFeatureVoxelShowsInTheDecision) {
  Device& dev = test::test_device();
  for (const FeatureScaling scaling : {FeatureScaling::kPerRun, FeatureScaling::kFeatureScale, FeatureScaling::kNone}) {
    DecoderModelFile m = random_model(2, 21);
    m.scaling = scaling;
    LiveDecoder decoder(dev, m, grid());
    std::vector<float> run = random_run(12, 22);
    run[static_cast<size_t>(6 * kVolume + m.voxels[5])] = std::numeric_limits<float>::quiet_NaN();
    DeviceBuffer<float> ring(dev, run.size());
    ring.write(dev.queue(), run);
    for (int64_t t = 0; t < 12; ++t) {
      decoder.enqueue(ring, static_cast<size_t>(t * kVolume));
      const double d = decoder.read().decision.front();
      if (t < 6) {
        EXPECT_TRUE(std::isfinite(d)) << t;
      } else if (t == 6 || scaling == FeatureScaling::kPerRun) {
        EXPECT_TRUE(std::isnan(d)) << "volume " << t << ", scaling " << static_cast<int>(scaling);
      }
    }
  }
}

TEST(LiveDecoder, RefusesWhatTheLivePathCannotReproduce) {
  Device& dev = test::test_device();
  DecoderModelFile m = random_model(2, 5);
  ImageHeader other = grid();
  other.dims = {kNx, kNy, kNz + 1};
  EXPECT_THROW(LiveDecoder(dev, m, other), std::invalid_argument);
  other = grid();
  other.affine(1, 3) += 2.0;  // moved by 2 mm
  try {
    LiveDecoder decoder(dev, m, other, "m.json");
    FAIL() << "a moved grid was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("m.json: the model's grid lies 2 mm"), std::string::npos) << e.what();
  }
  DecoderModelFile poly = m;
  poly.detrend_poly_order = 2;
  EXPECT_THROW(LiveDecoder(dev, poly, grid()), std::invalid_argument);
  DecoderModelFile dct = m;
  dct.highpass_cutoff_s = 100.0;
  EXPECT_THROW(LiveDecoder(dev, dct, grid()), std::invalid_argument);
  const DecoderModelFile many = random_model(17, 6);
  EXPECT_THROW(LiveDecoder(dev, many, grid()), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
