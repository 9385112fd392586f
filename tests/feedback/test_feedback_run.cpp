// FeedbackRun end to end against known answers: a block response of known amplitude gives its percent signal change
// once the haemodynamic delay has passed (delayed boxcar exactly; SPM-HRF response exactly against the baseline
// median), the Kalman filter lowers the noise and removes a spike, scaling stays in its documented range, the
// differential and averaged ROI modes, the correlation of two ROIs with a known correlation, intermittent values at
// block ends only, and a 2,000-volume run with drift, motion and noise that neither drifts nor blows up and whose last
// detrended value equals an independent least-squares fit. Tolerances are stated per test.
#include <gtest/gtest.h>

#include <Eigen/QR>
#include <chrono>
#include <cmath>
#include <numbers>
#include <random>

#include "core/feedback/feedback_run.hpp"
#include "core/feedback/feedback_stats.hpp"
#include "tests/feedback/feedback_fixtures.hpp"

namespace rtf {
namespace {

using feedback_test::block_events;
using feedback_test::exact_config;
using feedback_test::shifted_box;

FeedbackSample feed(FeedbackRun& run, int64_t volume, std::vector<double> rois) {
  return run.process(volume, rois);
}

TEST(FeedbackRun, BlockOfKnownAmplitudeGivesItsPscAfterTheDelay) {
  // y = 1000 + 0.5 i + 20 box(i), the response delayed by exactly the configured 4 s: PSC = 100 * 20 / (1000 + 0.5 i)
  // on regulation volumes, 0 on the others, to 1e-9 (absolute, in percent).
  // The same with the baseline named ("rest" events filling the gaps): identical values.
  const int64_t n = 120;
  FeedbackRun run(exact_config(n), block_events(2.0 * n));
  FeedbackConfig named_config = exact_config(n);
  named_config.baseline_condition = "rest";
  FeedbackRun named(named_config, block_events(2.0 * n, 20.0, true));
  for (int64_t i = 0; i < n; ++i) {
    const double box = shifted_box(i, 2.0, 4.0), level = 1000.0 + 0.5 * static_cast<double>(i);
    const FeedbackSample s = feed(run, i, {level + 20.0 * box});
    const FeedbackSample sn = feed(named, i, {level + 20.0 * box});
    EXPECT_EQ(sn.condition, s.condition) << i;
    EXPECT_EQ(sn.status, s.status) << i;
    if (s.status == FeedbackStatus::kOk) {
      EXPECT_EQ(sn.value, s.value) << i;
    }
    EXPECT_EQ(s.condition == VolumeCondition::kRegulation, box > 0.5) << i;
    if (i < 4) {  // volumes 0, 1 precede the run in shifted time; 2, 3 are the first two baseline volumes
      EXPECT_EQ(s.status, FeedbackStatus::kNotEnoughBaseline) << i;
      EXPECT_TRUE(std::isnan(s.value));
      EXPECT_FALSE(s.reason.empty());
      continue;
    }
    ASSERT_EQ(s.status, FeedbackStatus::kOk) << i << ": " << s.reason;
    EXPECT_NEAR(s.rois[0].baseline, 0.0, 1e-9) << i;
    EXPECT_NEAR(s.rois[0].level, level, 1e-9) << i;
    EXPECT_NEAR(s.value, 100.0 * 20.0 * box / level, 1e-9) << i;
  }
}

TEST(FeedbackRun, HrfShapedResponseAgainstTheBaselineMedian) {
  // y = 1000 + 15 r(i), r SPM's HRF regressor of 40 s blocks (TR 2, delay 6 s): the detrended signal is 15 r(i), and
  // the PSC is 100 * 15 (r(i) - median of r over the baseline volumes so far) / 1000, to 1e-9.
  const int64_t n = 160;
  FeedbackConfig c = exact_config(n);
  c.hrf_delay_s = 6.0;
  c.detrend.task_model = TaskModel::kHrf;
  const std::vector<Event> events = block_events(2.0 * n, 40.0);
  FeedbackRun run(c, events);
  const Eigen::MatrixXd r = run.schedule().task_regressors(TaskModel::kHrf);
  std::vector<double> baseline;
  double plateau = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const FeedbackSample s = feed(run, i, {1000.0 + 15.0 * r(i, 0)});
    const double shifted = 2.0 * static_cast<double>(i) - 6.0;
    if (shifted >= 0.0 && static_cast<int64_t>(shifted / 40.0) % 2 == 0) baseline.push_back(r(i, 0));
    if (baseline.size() < 3) {
      EXPECT_EQ(s.status, FeedbackStatus::kNotEnoughBaseline) << i;
      continue;
    }
    ASSERT_EQ(s.status, FeedbackStatus::kOk) << i << ": " << s.reason;
    EXPECT_NEAR(s.rois[0].detrended, 15.0 * r(i, 0), 1e-9) << i;
    EXPECT_NEAR(s.value, 100.0 * 15.0 * (r(i, 0) - median(baseline)) / 1000.0, 1e-9) << i;
    plateau = std::max(plateau, s.value);
  }
  // The plateau (r = 1 inside 40 s blocks) exceeds 1.5 a little: the baseline median includes the HRF's undershoot.
  EXPECT_GT(plateau, 1.5);
  EXPECT_LT(plateau, 1.8);
}

// Noisy blocks (sd 0.5 on 1000, 2% effect, drift) with the OpenNFT defaults (stepwise GLM, Kalman on).
std::vector<FeedbackSample> noisy_run(bool kalman, int64_t n, uint32_t seed, int64_t spike_at = -1) {
  FeedbackConfig c = exact_config(n);
  c.detrend.regressor_step = 0;
  c.kalman.enabled = kalman;
  FeedbackRun run(c, block_events(2.0 * n));
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.5);
  std::vector<FeedbackSample> out;
  for (int64_t i = 0; i < n; ++i) {
    const double y = 1000.0 + 0.3 * static_cast<double>(i) + 20.0 * shifted_box(i, 2.0, 4.0) + noise(rng) +
                     (i == spike_at ? 40.0 : 0.0);
    out.push_back(feed(run, i, {y}));
  }
  return out;
}

// Volumes at least `settle` volumes into their (shifted) block: the filter has followed the edge.
bool settled(int64_t i, int64_t settle) {
  for (int64_t k = 1; k <= settle; ++k) {
    if (i - k < 0 || shifted_box(i - k, 2.0, 4.0) != shifted_box(i, 2.0, 4.0)) return false;
  }
  return true;
}

TEST(FeedbackRun, KalmanLowersTheNoiseAndKeepsThePlateau) {
  // Bound: settled values (7 volumes into their block) within 0.45 percentage points of 2 (regulation) and 0
  // (baseline); measured 0.33: the filter's lag leaves the decay after each block in the baseline median (~0.14) and
  // ~0.06 of the step still to come. The baseline noise sd at most 0.7 x unfiltered (measured 0.52 x).
  const int64_t n = 300;
  const auto filtered = noisy_run(true, n, 7), unfiltered = noisy_run(false, n, 7);
  RunningMoments noise_filtered, noise_unfiltered;
  for (int64_t i = 60; i < n; ++i) {
    const auto k = static_cast<size_t>(i);
    ASSERT_EQ(filtered[k].status, FeedbackStatus::kOk) << i;
    if (!settled(i, 7)) continue;
    const double expected = 2.0 * shifted_box(i, 2.0, 4.0);
    EXPECT_NEAR(filtered[k].value, expected, 0.45) << i;
    if (expected == 0.0) {
      noise_filtered.add(filtered[k].value);
      noise_unfiltered.add(unfiltered[k].value);
    }
  }
  EXPECT_GT(noise_filtered.count(), 30);  // 3 settled baseline volumes in each of 12 blocks
  EXPECT_LT(noise_filtered.stddev(), 0.7 * noise_unfiltered.stddev())
      << noise_filtered.stddev() << " vs " << noise_unfiltered.stddev();
}

TEST(FeedbackRun, KalmanRemovesASpike) {
  // A +40 (4%) one-volume spike in a baseline block: the filter outputs its prediction, the value moves by less than
  // 0.05 percentage points (measured 0.003); without the filter it jumps by ~4 (measured 3.7).
  const int64_t n = 200, at = 169;  // shifted time 334 s: 7 volumes into a baseline block
  ASSERT_EQ(shifted_box(at, 2.0, 4.0), 0.0);
  const auto with = noisy_run(true, n, 9, at), without = noisy_run(false, n, 9, at);
  const auto k = static_cast<size_t>(at);
  EXPECT_TRUE(with[k].rois[0].spike);
  EXPECT_TRUE(with[k].any_spike);
  EXPECT_EQ(with[k].rois[0].filtered, with[k - 1].rois[0].filtered);  // the prediction is the previous state
  EXPECT_LT(std::abs(with[k].value - with[k - 1].value), 0.05);
  EXPECT_GT(without[k].value - without[k - 1].value, 3.5);
}

TEST(FeedbackRun, ScalingMapsIntoItsRange) {
  // Scaled values lie in [0, 1] between limits that contain the filtered value and the baseline median and span at
  // least 2 x 0.005 x level; the value is (filtered - baseline) / (upper - lower), hence in [-1, 1] (to 1e-12).
  const int64_t n = 200;
  FeedbackConfig c = exact_config(n);
  c.kalman.enabled = true;
  c.scaling.enabled = true;
  c.scaling.window_volumes = 50;  // a lagging window shorter than the run
  FeedbackRun run(c, block_events(2.0 * n));
  std::mt19937 rng(4);
  std::normal_distribution<double> noise(0.0, 2.0);
  double max_value = -1.0;
  for (int64_t i = 0; i < n; ++i) {
    const double y = 900.0 + 20.0 * shifted_box(i, 2.0, 4.0) + noise(rng);
    const FeedbackSample s = feed(run, i, {y});
    const RoiSample& r = s.rois[0];
    ASSERT_TRUE(std::isfinite(r.scaled)) << i;
    EXPECT_GE(r.scaled, 0.0);
    EXPECT_LE(r.scaled, 1.0);
    EXPECT_LE(r.scale_lower, r.filtered);
    EXPECT_GE(r.scale_upper, r.filtered);
    EXPECT_GE(r.scale_upper - r.scale_lower, 2.0 * 0.005 * r.level - 1e-9);
    if (s.status != FeedbackStatus::kOk) continue;
    EXPECT_LE(r.scale_lower, r.baseline);
    EXPECT_GE(r.scale_upper, r.baseline);
    EXPECT_NEAR(s.value, (r.filtered - r.baseline) / (r.scale_upper - r.scale_lower), 1e-12) << i;
    EXPECT_LE(std::abs(s.value), 1.0);
    max_value = std::max(max_value, s.value);
  }
  EXPECT_GT(max_value, 0.5);  // regulation blocks reach the upper half of the range

  // OpenNFT's display convention: gain 100, clamped to [0, 100].
  c.gain = 100.0;
  c.min_value = 0.0;
  c.max_value = 100.0;
  FeedbackRun display(c, block_events(2.0 * n));
  std::mt19937 rng2(4);
  for (int64_t i = 0; i < n; ++i) {
    const FeedbackSample s = feed(display, i, {900.0 + 20.0 * shifted_box(i, 2.0, 4.0) + noise(rng2)});
    if (s.status != FeedbackStatus::kOk) continue;
    EXPECT_GE(s.value, 0.0);
    EXPECT_LE(s.value, 100.0);
  }
}

TEST(FeedbackRun, DifferentialAndAveragedRois) {
  // ROI 0: 2% on 1000; ROI 2: 1% on 500 (5 units); ROI 1 unused and NaN (not looked at). Differential: 2 - 1 = 1;
  // averaged (kRoiPsc over both): 1.5. To 1e-9 on regulation volumes, 0 elsewhere.
  const int64_t n = 100;
  FeedbackConfig c = exact_config(n, 3);
  c.mode = FeedbackMode::kDifferentialPsc;
  c.rois = {0, 2};
  FeedbackRun differential(c, block_events(2.0 * n));
  c.mode = FeedbackMode::kRoiPsc;
  FeedbackRun averaged(c, block_events(2.0 * n));
  for (int64_t i = 0; i < n; ++i) {
    const double box = shifted_box(i, 2.0, 4.0), t = static_cast<double>(i);
    const std::vector<double> rois{1000.0 + 0.2 * t + 20.0 * box, std::nan(""), 500.0 - 0.1 * t + 5.0 * box};
    const FeedbackSample d = differential.process(i, rois), a = averaged.process(i, rois);
    if (i < 4) continue;
    ASSERT_EQ(d.status, FeedbackStatus::kOk) << d.reason;
    ASSERT_EQ(a.status, FeedbackStatus::kOk) << a.reason;
    EXPECT_NEAR(d.rois[0].psc, 100.0 * 20.0 * box / (1000.0 + 0.2 * t), 1e-9) << i;
    EXPECT_NEAR(d.rois[1].psc, 100.0 * 5.0 * box / (500.0 - 0.1 * t), 1e-9) << i;
    EXPECT_NEAR(d.value, d.rois[0].psc - d.rois[1].psc, 1e-12);
    EXPECT_NEAR(a.value, 0.5 * (d.rois[0].psc + d.rois[1].psc), 1e-12);
    if (box > 0.5 && i < 20) {  // early: levels near 1000 and 500 (the drifts move them by < 0.4%)
      EXPECT_NEAR(d.value, 1.0, 0.02);
      EXPECT_NEAR(a.value, 1.5, 0.02);
    }
  }
}

// Two ROIs whose raw signals correlate exactly 0.6 over every 20-volume window: a = 1000 + 10 u, b = 700 + 10 (0.6 u
// + 0.8 w), u = cos(2 pi t / 10), w = sin(2 pi t / 10).
std::vector<double> correlated_rois(int64_t t) {
  const double phase = 2.0 * std::numbers::pi * static_cast<double>(t) / 10.0;
  return {1000.0 + 10.0 * std::cos(phase), 700.0 + 10.0 * (0.6 * std::cos(phase) + 0.8 * std::sin(phase))};
}

FeedbackConfig connectivity_config(int64_t n) {
  FeedbackConfig c;
  c.mode = FeedbackMode::kConnectivity;
  c.tr_s = 1.0;
  c.n_volumes = n;
  c.n_rois = 2;
  c.rois = {0, 1};
  c.kalman.enabled = false;
  c.detrend.drift_order = 0;
  c.detrend.task_model = TaskModel::kNone;
  c.connectivity_window = 20;
  return c;
}

TEST(FeedbackRun, ConnectivityOfTwoRoisWithAKnownCorrelation) {
  // The processed series is y_t minus the cumulative mean at t (constant-only GLM): the sliding-window Pearson r
  // equals that of an independent recomputation to 1e-9, and approaches 0.6 as the cumulative mean settles (within
  // 1e-4 from volume 600). Fisher z: atanh(r) to 1e-12. The first 9 volumes are too few (needs 10 of 20).
  const int64_t n = 800;
  FeedbackRun run(connectivity_config(n), {});
  FeedbackConfig zc = connectivity_config(n);
  zc.fisher_z = true;
  FeedbackRun z(zc, {});
  std::vector<double> a, b, da, db;
  RunningMoments ma, mb;
  for (int64_t i = 0; i < n; ++i) {
    const std::vector<double> y = correlated_rois(i);
    ma.add(y[0]);
    mb.add(y[1]);
    da.push_back(y[0] - ma.mean());
    db.push_back(y[1] - mb.mean());
    const FeedbackSample s = run.process(i, y), sz = z.process(i, y);
    // No events: all rest, after the default 5 s delay (volumes 0..4 precede the run in shifted time).
    EXPECT_EQ(s.condition, i < 5 ? VolumeCondition::kNone : VolumeCondition::kBaseline) << i;
    if (i < 9) {
      EXPECT_EQ(s.status, FeedbackStatus::kNotEnoughVolumes) << i;
      continue;
    }
    ASSERT_EQ(s.status, FeedbackStatus::kOk) << i << ": " << s.reason;
    const size_t from = static_cast<size_t>(std::max<int64_t>(0, i - 19));
    const double expected =
        pearson(std::span<const double>(da).subspan(from), std::span<const double>(db).subspan(from));
    EXPECT_NEAR(s.connectivity, expected, 1e-9) << i;
    EXPECT_EQ(s.value, s.connectivity);
    EXPECT_NEAR(sz.value, std::atanh(s.connectivity), 1e-12);
    if (i >= 600) {
      EXPECT_NEAR(s.value, 0.6, 1e-4) << i;  // measured 1.3e-5
    }
  }
}

TEST(FeedbackRun, ConnectivityProvidedAndIntermittent) {
  // Provided r is passed through (and Fisher-z'd); intermittent connectivity over each regulation block's volumes:
  // b = 2 a + 5 gives r = 1, b = -a gives r = -1 (to 1e-12), values at block ends only.
  const int64_t n = 100;
  FeedbackConfig c = connectivity_config(n);
  c.connectivity_source = ConnectivitySource::kProvided;
  c.fisher_z = true;
  FeedbackRun provided(c, {});
  const FeedbackSample p = provided.process(0, std::vector<double>{1.0, 2.0}, {}, 0.5);
  ASSERT_EQ(p.status, FeedbackStatus::kOk);
  EXPECT_EQ(p.connectivity, 0.5);
  EXPECT_NEAR(p.value, 0.5 * std::log(3.0), 1e-15);

  for (const double sign : {1.0, -1.0}) {
    FeedbackConfig ic = connectivity_config(n);
    ic.tr_s = 2.0;
    ic.hrf_delay_s = 4.0;
    ic.protocol = FeedbackProtocol::kIntermittent;
    FeedbackRun run(ic, block_events(2.0 * n));
    std::mt19937 rng(8);
    std::normal_distribution<double> normal;
    int values = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double x = 1000.0 + 5.0 * normal(rng);
      const FeedbackSample s = run.process(i, std::vector<double>{x, sign > 0 ? 2.0 * x + 5.0 : 2000.0 - x});
      const bool end = shifted_box(i, 2.0, 4.0) > 0.5 && (i == n - 1 || shifted_box(i + 1, 2.0, 4.0) < 0.5);
      if (!end) {
        EXPECT_EQ(s.status, FeedbackStatus::kNotBlockEnd) << i;
        continue;
      }
      ASSERT_EQ(s.status, FeedbackStatus::kOk) << s.reason;
      EXPECT_TRUE(s.block_end);
      EXPECT_EQ(s.regulation_block, values);
      EXPECT_NEAR(s.value, sign, 1e-12);
      ++values;
    }
    EXPECT_EQ(values, 5);  // blocks end at volumes 21, 41, 61, 81 and 99 (the last cut by the end of the run)
  }
}

TEST(FeedbackRun, IntermittentPscAtBlockEndsOnly) {
  // One value per regulation block, at its last (shifted) volume: 100 * 20 / level, to 1e-9; every other volume is
  // NaN with status kNotBlockEnd and a reason naming the next block end.
  const int64_t n = 120;
  FeedbackConfig c = exact_config(n);
  c.protocol = FeedbackProtocol::kIntermittent;
  FeedbackRun run(c, block_events(2.0 * n));
  int values = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double level = 1000.0 + 0.5 * static_cast<double>(i);
    const FeedbackSample s = feed(run, i, {level + 20.0 * shifted_box(i, 2.0, 4.0)});
    const bool end = shifted_box(i, 2.0, 4.0) > 0.5 && (i == n - 1 || shifted_box(i + 1, 2.0, 4.0) < 0.5);
    if (!end) {
      EXPECT_EQ(s.status, FeedbackStatus::kNotBlockEnd) << i;
      EXPECT_TRUE(std::isnan(s.value));
      EXPECT_NE(s.reason.find("next value at volume"), std::string::npos) << s.reason;
      continue;
    }
    ASSERT_EQ(s.status, FeedbackStatus::kOk) << i << ": " << s.reason;
    EXPECT_TRUE(s.block_end);
    EXPECT_EQ(s.regulation_block, values);
    EXPECT_NEAR(s.value, 100.0 * 20.0 / level, 1e-9) << i;
    ++values;
  }
  EXPECT_EQ(values, 6);  // regulation blocks end at volumes 21, 41, 61, 81, 101, 119 (the last cut by the run)
}

TEST(FeedbackRun, LongRunWithDriftMotionAndNoiseStaysStable) {
  // 2,000 volumes (TR 2 s): level 1000 with a quadratic drift of 40, motion-related signal (random-walk motion),
  // noise sd 2, a 1% block effect; quadratic drift and motion regressors, Kalman on. Every value from volume 10 on is
  // finite; the filtered signal stays within [-10, 25] (measured -2.5..12.7); the mean value over settled regulation
  // volumes of the last 20 blocks is 1 within 0.2 (measured 0.87: Kalman lag, see above), of settled baseline volumes
  // 0 within 0.2 (measured 0.09); at the last volume
  // the detrended value equals an independent QR fit over all 2,000 volumes within 1e-9 x level. With scaling on
  // every value stays in [-1, 1].
  const int64_t n = 2000;
  std::mt19937 rng(2024);
  std::normal_distribution<double> normal;
  Eigen::MatrixXd motion(n, 6);
  Eigen::VectorXd y(n), walk = Eigen::VectorXd::Zero(6);
  for (int64_t i = 0; i < n; ++i) {
    for (int m = 0; m < 6; ++m) motion(i, m) = (walk(m) += 0.02 * normal(rng));
    const double tau = static_cast<double>(i) / static_cast<double>(n - 1);
    y(i) = 1000.0 + 40.0 * tau * tau + 5.0 * motion(i, 0) + 3.0 * motion(i, 3) + 10.0 * shifted_box(i, 2.0, 4.0) +
           2.0 * normal(rng);
  }
  FeedbackConfig c = exact_config(n);
  c.detrend.regressor_step = 0;
  c.detrend.drift_order = 2;
  c.detrend.motion_regressors = true;
  c.kalman.enabled = true;
  FeedbackConfig sc = c;
  sc.scaling.enabled = true;
  FeedbackRun run(c, block_events(2.0 * n)), scaled(sc, block_events(2.0 * n));
  RunningMoments late_regulation, late_baseline;
  double lo = 0.0, hi = 0.0;
  FeedbackSample last;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) {
    const Eigen::VectorXd m = motion.row(i).transpose();
    const std::vector<double> rois{y(i)};
    last = run.process(i, rois, std::span<const double>(m.data(), 6));
    const FeedbackSample s2 = scaled.process(i, rois, std::span<const double>(m.data(), 6));
    if (i < 10) continue;
    ASSERT_EQ(last.status, FeedbackStatus::kOk) << i << ": " << last.reason;
    ASSERT_TRUE(std::isfinite(last.value)) << i;
    ASSERT_EQ(s2.status, FeedbackStatus::kOk) << i;
    EXPECT_LE(std::abs(s2.value), 1.0) << i;
    lo = std::min(lo, last.rois[0].filtered);
    hi = std::max(hi, last.rois[0].filtered);
    if (i >= n - 400 && settled(i, 7)) {
      (shifted_box(i, 2.0, 4.0) > 0.5 ? late_regulation : late_baseline).add(last.value);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("2,000-volume run, two configurations: %.3f s (%.3f ms per volume each)\n", seconds,
              1e3 * seconds / (2.0 * static_cast<double>(n)));
  EXPECT_GT(lo, -10.0);
  EXPECT_LT(hi, 25.0);
  EXPECT_NEAR(late_regulation.mean(), 1.0, 0.2);
  EXPECT_NEAR(late_baseline.mean(), 0.0, 0.2);

  // Independent fit: constant, Legendre P1, P2 over the run, the six motion columns and the task column.
  Eigen::MatrixXd x(n, 10);
  for (int64_t i = 0; i < n; ++i) {
    const double u = 2.0 * static_cast<double>(i) / static_cast<double>(n - 1) - 1.0;
    x.row(i) << 1.0, u, 1.5 * u * u - 0.5, motion.row(i), shifted_box(i, 2.0, 4.0);
  }
  x.middleCols(3, 6).rowwise() -= x.middleCols(3, 6).colwise().mean();  // level at the mean head position
  const Eigen::VectorXd beta = x.householderQr().solve(y);
  const double nuisance = x.row(n - 1).head(9).dot(beta.head(9));
  EXPECT_NEAR(last.rois[0].detrended, y(n - 1) - nuisance, 1e-9 * 1000.0);
  EXPECT_NEAR(last.rois[0].level, x.row(n - 1).head(3).dot(beta.head(3)), 1e-9 * 1000.0);
}

}  // namespace
}  // namespace rtf
