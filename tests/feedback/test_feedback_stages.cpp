// The neurofeedback stages one by one against analytic answers: the condition schedule (haemodynamic shift, rest or
// named baseline, blocks, task columns), the cumulative-GLM detrending (exact on signals in the model's span, equal to
// an independent least-squares fit, stepwise entry, gaps), the modified Kalman filter (steady-state variance of the
// scalar Riccati recursion, spike replaced, level change accepted, gaps), dynamic scaling limits, and the statistics.
// Tolerances: 1e-9 relative to the signal level (~1000) for the GLM, 1e-12 for closed forms, unless stated.
#include <gtest/gtest.h>

#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <random>

#include "core/design/design_matrix.hpp"
#include "core/feedback/condition_schedule.hpp"
#include "core/feedback/cumulative_detrend.hpp"
#include "core/feedback/dynamic_scaling.hpp"
#include "core/feedback/feedback_stats.hpp"
#include "core/feedback/modified_kalman.hpp"
#include "tests/feedback/feedback_fixtures.hpp"

namespace rtf {
namespace {

using feedback_test::block_events;
using feedback_test::shifted_box;

// ---------------------------------------------------------------------------------------------------------------
// Condition schedule

TEST(ConditionSchedule, RestBaselineShiftedByTheDelay) {
  // TR 2, delay 4: volume i shows time 2i - 4. "up" covers [20, 40), [60, 80), ...
  const ConditionSchedule s(block_events(200.0), 2.0, 100, "", {}, 4.0);
  EXPECT_EQ(s.condition(0), VolumeCondition::kNone);  // shifted time -4: before the run
  EXPECT_EQ(s.condition(1), VolumeCondition::kNone);  // -2
  EXPECT_EQ(s.condition(2), VolumeCondition::kBaseline);
  EXPECT_EQ(s.condition(11), VolumeCondition::kBaseline);    // 18
  EXPECT_EQ(s.condition(12), VolumeCondition::kRegulation);  // 20
  EXPECT_EQ(s.condition(21), VolumeCondition::kRegulation);  // 38
  EXPECT_EQ(s.condition(22), VolumeCondition::kBaseline);    // 40
  for (int64_t i = 0; i < 100; ++i) {
    const bool up = shifted_box(i, 2.0, 4.0) > 0.5;
    EXPECT_EQ(s.condition(i) == VolumeCondition::kRegulation, up) << i;
  }
  // Blocks: baseline 2..11, regulation 12..21 (ordinal 0), baseline 22..31, regulation 32..41 (ordinal 1), ...
  ASSERT_GE(s.blocks().size(), 4u);
  EXPECT_EQ(s.blocks()[0].condition, VolumeCondition::kBaseline);
  EXPECT_EQ(s.blocks()[0].first, 2);
  EXPECT_EQ(s.blocks()[0].last, 11);
  EXPECT_EQ(s.blocks()[1].condition, VolumeCondition::kRegulation);
  EXPECT_EQ(s.blocks()[1].first, 12);
  EXPECT_EQ(s.blocks()[1].last, 21);
  EXPECT_EQ(s.blocks()[1].trial_type, "up");
  EXPECT_EQ(s.ordinal(1), 0);
  EXPECT_EQ(s.ordinal(3), 1);
  EXPECT_EQ(s.block(0), -1);
  EXPECT_THROW((void)s.condition(100), std::out_of_range);
  EXPECT_EQ(s.task_conditions(), std::vector<std::string>{"up"});
}

TEST(ConditionSchedule, NamedBaselineOtherConditionsAndPriority) {
  std::vector<Event> events = {{0.0, 10.0, "rest", {}},  {10.0, 10.0, "up", {}},   {20.0, 2.0, "cue", {}},
                               {22.0, 10.0, "down", {}}, {32.0, 10.0, "rest", {}}, {35.0, 4.0, "up", {}}};
  // Regulation: "up" only; "down" and "cue" are other conditions; uncovered time is kNone with a named baseline.
  const ConditionSchedule s(events, 1.0, 50, "rest", {"up"}, 0.0);
  EXPECT_EQ(s.condition(5), VolumeCondition::kBaseline);
  EXPECT_EQ(s.condition(10), VolumeCondition::kRegulation);
  EXPECT_EQ(s.condition(21), VolumeCondition::kOther);  // cue
  EXPECT_EQ(s.condition(25), VolumeCondition::kOther);  // down
  EXPECT_EQ(s.condition(33), VolumeCondition::kBaseline);
  EXPECT_EQ(s.condition(36), VolumeCondition::kRegulation);  // up overlapping rest wins
  EXPECT_EQ(s.condition(39), VolumeCondition::kBaseline);
  EXPECT_EQ(s.condition(45), VolumeCondition::kNone);  // after the last event
  EXPECT_EQ(s.regulation_conditions(), std::vector<std::string>{"up"});
  EXPECT_EQ(s.task_conditions(), (std::vector<std::string>{"cue", "down", "up"}));  // all but the baseline, sorted
}

TEST(ConditionSchedule, TaskRegressors) {
  const std::vector<Event> events = block_events(120.0);
  const ConditionSchedule s(events, 2.0, 60, "", {}, 6.0);
  const Eigen::MatrixXd box = s.task_regressors(TaskModel::kDelayedBoxcar);
  ASSERT_EQ(box.cols(), 1);
  for (int64_t i = 0; i < 60; ++i) {
    EXPECT_EQ(box(i, 0), s.condition(i) == VolumeCondition::kRegulation ? 1.0 : 0.0) << i;
  }
  // kHrf: the SPM design's column for the condition (core/design's defaults).
  DesignOptions o;
  o.tr_s = 2.0;
  o.n_scans = 60;
  o.drift = DriftModel::kNone;
  o.add_constant = false;
  const DesignMatrix d = build_design_matrix(events, o);
  const Eigen::MatrixXd hrf = s.task_regressors(TaskModel::kHrf);
  ASSERT_EQ(hrf.cols(), 1);
  EXPECT_LT((hrf.col(0) - d.x.col(*d.find("up"))).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_EQ(s.task_regressors(TaskModel::kNone).cols(), 0);
}

TEST(ConditionSchedule, RejectsUnknownConditionsAndBadTiming) {
  const std::vector<Event> events = block_events(100.0);
  EXPECT_THROW(ConditionSchedule(events, 2.0, 50, "fixation", {}, 4.0), std::invalid_argument);
  EXPECT_THROW(ConditionSchedule(events, 2.0, 50, "", {"down"}, 4.0), std::invalid_argument);
  EXPECT_THROW(ConditionSchedule(events, 2.0, 50, "up", {"up"}, 4.0), std::invalid_argument);
  EXPECT_THROW(ConditionSchedule(events, 0.0, 50, "", {}, 4.0), std::invalid_argument);
  EXPECT_THROW(ConditionSchedule(events, 2.0, 0, "", {}, 4.0), std::invalid_argument);
  EXPECT_THROW(ConditionSchedule(events, 2.0, 50, "", {}, -1.0), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------------------------
// Cumulative-GLM detrending

TEST(CumulativeDetrend, ExactOnTrendPlusTaskFromTheFirstVolume) {
  // y = 1000 + 3 i + 20 box(i): the detrended value is the task part 20 box(i), the level 1000 + 3 i, every TR.
  const int64_t n = 80;
  const ConditionSchedule s(block_events(160.0), 2.0, n, "", {}, 4.0);
  DetrendOptions o;
  o.task_model = TaskModel::kDelayedBoxcar;
  o.regressor_step = 1;
  CumulativeDetrend d(o, n, s.task_regressors(o.task_model), 1);
  for (int64_t i = 0; i < n; ++i) {
    const double box = shifted_box(i, 2.0, 4.0);
    const double y = 1000.0 + 3.0 * static_cast<double>(i) + 20.0 * box;
    const DetrendResult r = d.add(i, std::vector<double>{y});
    EXPECT_NEAR(r.detrended(0), 20.0 * box, 1e-9) << i;
    EXPECT_NEAR(r.level(0), 1000.0 + 3.0 * static_cast<double>(i), 1e-9) << i;
  }
  // Without retaining the task fit the detrended value is the residual: 0.
  o.retain_task_fit = false;
  CumulativeDetrend residual(o, n, s.task_regressors(o.task_model), 1);
  for (int64_t i = 0; i < n; ++i) {
    const double y = 1000.0 + 3.0 * static_cast<double>(i) + 20.0 * shifted_box(i, 2.0, 4.0);
    EXPECT_NEAR(residual.add(i, std::vector<double>{y}).detrended(0), 0.0, 1e-9) << i;
  }
}

TEST(CumulativeDetrend, StepwiseEntryOfColumns) {
  // Full model: constant, linear, quadratic, task = 4 columns; step 4: 1 column below 4 volumes, 3 below 8, then 4.
  const int64_t n = 40;
  const ConditionSchedule s(block_events(80.0, 4.0), 2.0, n, "", {}, 0.0);  // 4 s blocks: "up" from volume 2
  DetrendOptions o;
  o.drift_order = 2;
  o.task_model = TaskModel::kDelayedBoxcar;
  CumulativeDetrend d(o, n, s.task_regressors(o.task_model), 1);
  EXPECT_EQ(d.full_columns(), 4);
  EXPECT_EQ(d.step(), 4);
  std::mt19937 rng(11);
  std::normal_distribution<double> noise;
  for (int64_t i = 0; i < 12; ++i) {
    const Eigen::Index expected = i + 1 < 4 ? 1 : (i + 1 < 8 ? 3 : 4);
    EXPECT_EQ(d.add(i, std::vector<double>{1000.0 + noise(rng)}).columns, expected) << i;
  }
}

TEST(CumulativeDetrend, EqualsAnIndependentLeastSquaresFitWithMotionAndGaps) {
  // Random signal and motion over 150 of 160 volumes (10 missing): at each checkpoint the detrended value equals
  // y_last - (constant + drift + motion fit) from a plain QR fit of the design over the same volumes.
  const int64_t n = 160;
  const ConditionSchedule s(block_events(320.0), 2.0, n, "", {}, 5.0);
  DetrendOptions o;
  o.drift_order = 2;
  o.motion_regressors = true;
  o.task_model = TaskModel::kHrf;
  const Eigen::MatrixXd task = s.task_regressors(o.task_model);
  CumulativeDetrend d(o, n, task, 2);
  std::mt19937 rng(5);
  std::normal_distribution<double> normal;
  Eigen::MatrixXd motion(n, 6), y(n, 2);
  Eigen::VectorXd walk = Eigen::VectorXd::Zero(6);
  for (int64_t i = 0; i < n; ++i) {
    for (int m = 0; m < 6; ++m) motion(i, m) = (walk(m) += 0.05 * normal(rng));
    y(i, 0) = 1200.0 + 0.2 * static_cast<double>(i) + 15.0 * task(i, 0) + 8.0 * motion(i, 2) + 3.0 * normal(rng);
    y(i, 1) = 800.0 - 0.1 * static_cast<double>(i) + 4.0 * motion(i, 4) + 3.0 * normal(rng);
  }
  const Eigen::MatrixXd legendre = (Eigen::MatrixXd(n, 2) << Eigen::VectorXd::LinSpaced(n, -1.0, 1.0),
                                    Eigen::VectorXd::LinSpaced(n, -1.0, 1.0).array().square() * 1.5 - 0.5)
                                       .finished();
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < n; ++i) {
    if (i % 16 == 7) continue;  // a missing volume every 16
    kept.push_back(i);
    const Eigen::VectorXd yi = y.row(i).transpose();
    const Eigen::VectorXd mi = motion.row(i).transpose();
    const DetrendResult r = d.add(i, std::span<const double>(yi.data(), 2), std::span<const double>(mi.data(), 6));
    if (kept.size() < 40 || kept.size() % 20 != 0) continue;  // every column is in from 2 x 10 volumes
    const auto rows = static_cast<Eigen::Index>(kept.size());
    Eigen::MatrixXd x(rows, 10);
    Eigen::MatrixXd yy(rows, 2);
    for (Eigen::Index k = 0; k < rows; ++k) {
      const int64_t v = kept[static_cast<size_t>(k)];
      x.row(k) << 1.0, legendre(v, 0), legendre(v, 1), motion.row(v), task(v, 0);
      yy.row(k) = y.row(v);
    }
    // The level is constant + drift with the motion columns centred over the fitted volumes (the level at the mean
    // head position); centring changes no fitted value, only how the constant and the motion part share it.
    x.middleCols(3, 6).rowwise() -= x.middleCols(3, 6).colwise().mean();
    const Eigen::MatrixXd beta = x.householderQr().solve(yy);
    for (int sr = 0; sr < 2; ++sr) {
      const Eigen::RowVectorXd last = x.row(rows - 1);
      const double nuisance = last.head(9).dot(beta.col(sr).head(9));
      const double level = last.head(3).dot(beta.col(sr).head(3));
      EXPECT_NEAR(r.detrended(sr), yy(rows - 1, sr) - nuisance, 1e-9 * 1000.0) << i << " series " << sr;
      EXPECT_NEAR(r.level(sr), level, 1e-9 * 1000.0) << i << " series " << sr;
    }
  }
}

TEST(CumulativeDetrend, RefusesOutOfOrderAndWrongSizes) {
  DetrendOptions o;
  o.motion_regressors = true;
  CumulativeDetrend d(o, 10, Eigen::MatrixXd(10, 0), 1);
  const std::vector<double> m(6, 0.0), y{1.0};
  (void)d.add(3, y, m);
  EXPECT_THROW((void)d.add(3, y, m), std::invalid_argument);
  EXPECT_THROW((void)d.add(2, y, m), std::invalid_argument);
  EXPECT_THROW((void)d.add(10, y, m), std::invalid_argument);
  EXPECT_THROW((void)d.add(4, std::vector<double>{1.0, 2.0}, m), std::invalid_argument);
  EXPECT_THROW((void)d.add(4, y, std::vector<double>(5, 0.0)), std::invalid_argument);
  EXPECT_THROW(CumulativeDetrend(o, 10, Eigen::MatrixXd(9, 1), 1), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------------------------
// Modified Kalman filter

TEST(ModifiedKalman, VarianceReachesTheRiccatiFixedPointAndTracksALevel) {
  // With sigma fixed, P follows p' = (p + q) r / (p + q + r); its fixed point is (-q + sqrt(q^2 + 4 q r)) / 2.
  KalmanOptions o;
  o.spike_threshold = 100.0;  // no spike rule here
  ModifiedKalmanFilter f(o);
  const double sigma = 2.0, q = 0.25 * sigma * sigma, r = sigma * sigma;
  for (int i = 0; i < 300; ++i) (void)f.update(5.0, sigma);
  EXPECT_NEAR(f.variance(), (-q + std::sqrt(q * q + 4.0 * q * r)) / 2.0, 1e-12);
  EXPECT_NEAR(f.state(), 5.0, 1e-12);
  // One step from a known state: x' = x + K (y - x), K = (p + q) / (p + q + r).
  const double p = f.variance();
  const auto out = f.update(6.0, sigma);
  EXPECT_NEAR(out.value, 5.0 + (p + q) / (p + q + r), 1e-12);
  EXPECT_FALSE(out.spike);
  // A gap of 3 volumes: the prediction variance is p + 3 q.
  const double x0 = f.state(), p0 = f.variance();
  const auto gap = f.update(7.0, sigma, 3);
  EXPECT_NEAR(gap.value, x0 + (p0 + 3 * q) / (p0 + 3 * q + r) * (7.0 - x0), 1e-12);
}

TEST(ModifiedKalman, FirstSampleWithZeroSigmaIsNotASpike) {
  ModifiedKalmanFilter f;
  const auto out = f.update(3.0, 0.0);
  EXPECT_EQ(out.value, 0.0);  // OpenNFT: state 0, variance 0, gain 0
  EXPECT_FALSE(out.spike);
}

TEST(ModifiedKalman, SingleSpikeIsReplacedByThePrediction) {
  // Unit-variance noise; at sample 150 a +12 spike. The filter outputs its prediction (the previous state) there,
  // flags it, and is not moved by it.
  std::mt19937 rng(3);
  std::normal_distribution<double> noise;
  ModifiedKalmanFilter f;
  RunningMoments moments;
  double before = 0.0;
  int spikes = 0;
  for (int i = 0; i < 200; ++i) {
    const double y = noise(rng) + (i == 150 ? 12.0 : 0.0);
    moments.add(y);
    before = f.state();
    const auto out = f.update(y, moments.stddev());
    if (i == 150) {
      EXPECT_TRUE(out.spike);
      EXPECT_EQ(out.value, before);
      EXPECT_EQ(f.state(), before);
    } else if (i > 20) {
      spikes += out.spike ? 1 : 0;
    }
  }
  // Away from the spike, noise samples are rarely taken for spikes: |K e| > 0.9 s needs |e| > ~2.3 s, about 4% of
  // samples here (innovation sd ~1.1 s). Bound: 20 of 178 (11%).
  EXPECT_LE(spikes, 20);
}

TEST(ModifiedKalman, SecondLargeStepInTheSameDirectionIsAccepted) {
  KalmanOptions o;
  ModifiedKalmanFilter f(o);
  for (int i = 0; i < 100; ++i) (void)f.update(0.0, 1.0);
  const double p = f.variance(), q = 0.25, r = 1.0;
  const auto first = f.update(10.0, 1.0);  // K (10 - 0) > 0.9: spike
  EXPECT_TRUE(first.spike);
  EXPECT_EQ(first.value, 0.0);
  const auto second = f.update(10.0, 1.0);  // again: a level change, accepted with the grown variance p + 2q
  EXPECT_FALSE(second.spike);
  EXPECT_NEAR(second.value, (p + 2 * q) / (p + 2 * q + r) * 10.0, 1e-12);
  // A negative spike after a positive one is still the first in its direction.
  for (int i = 0; i < 100; ++i) (void)f.update(10.0, 1.0);
  EXPECT_TRUE(f.update(-10.0, 1.0).spike);
  EXPECT_NEAR(f.state(), 10.0, 1e-9);
}

// ---------------------------------------------------------------------------------------------------------------
// Dynamic scaling and statistics

TEST(DynamicScaling, MinMaxThenRobustLimitsAndTheMinimumRange) {
  ScalingOptions o;  // robust from 20 values, 5%
  const std::vector<double> short_window{-3.0, 6.0, 1.0, 0.5};
  ScalingLimits l = dynamic_scaling_limits(short_window, 0.5, o);
  EXPECT_EQ(l.lower, -3.0);
  EXPECT_EQ(l.upper, 6.0);
  l = dynamic_scaling_limits(std::vector<double>{1.0, 2.0}, 0.5, o);  // at least -+0.5
  EXPECT_EQ(l.lower, -0.5);
  EXPECT_EQ(l.upper, 2.0);
  // 0..99 shuffled: m = round(0.05 * 100) = 5; medians of {0..4} and {95..99}.
  std::vector<double> w(100);
  std::iota(w.begin(), w.end(), -50.0);
  std::shuffle(w.begin(), w.end(), std::mt19937(1));
  l = dynamic_scaling_limits(w, 0.5, o);
  EXPECT_EQ(l.lower, -48.0);
  EXPECT_EQ(l.upper, 47.0);
  l.include(49.0);
  EXPECT_EQ(l.upper, 49.0);
  EXPECT_DOUBLE_EQ(l.scale(49.0), 1.0);
  EXPECT_DOUBLE_EQ(l.scale(-48.0), 0.0);
  EXPECT_THROW((void)dynamic_scaling_limits(w, 0.0, o), std::invalid_argument);
  l = dynamic_scaling_limits({}, 0.25, o);
  EXPECT_EQ(l.lower, -0.25);
  EXPECT_EQ(l.upper, 0.25);
}

TEST(FeedbackStats, MedianPearsonFisherAndRunningMoments) {
  EXPECT_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_TRUE(std::isnan(median({})));
  const std::vector<double> a{1, 2, 3, 4, 5}, b{2, 4, 6, 8, 10}, c{5, 4, 3, 2, 1}, flat{1, 1, 1, 1, 1};
  EXPECT_NEAR(pearson(a, b), 1.0, 1e-15);
  EXPECT_NEAR(pearson(a, c), -1.0, 1e-15);
  EXPECT_TRUE(std::isnan(pearson(a, flat)));
  EXPECT_TRUE(std::isnan(pearson(a, std::vector<double>{1, 2})));
  // cos and sin over whole periods are uncorrelated; a mix with weights (0.6, 0.8) correlates 0.6 with cos.
  std::vector<double> u(40), v(40);
  for (int t = 0; t < 40; ++t) {
    u[static_cast<size_t>(t)] = std::cos(2.0 * std::numbers::pi * t / 10.0);
    v[static_cast<size_t>(t)] = 0.6 * u[static_cast<size_t>(t)] + 0.8 * std::sin(2.0 * std::numbers::pi * t / 10.0);
  }
  EXPECT_NEAR(pearson(u, v), 0.6, 1e-12);
  EXPECT_NEAR(fisher_z(0.5), 0.5 * std::log(3.0), 1e-15);
  EXPECT_TRUE(std::isfinite(fisher_z(1.0)));
  EXPECT_GT(fisher_z(1.0), 14.0);
  RunningMoments m;
  for (const double x : a) m.add(1e9 + x);  // large offset: Welford keeps the variance
  EXPECT_NEAR(m.mean(), 1e9 + 3.0, 1e-6);
  EXPECT_NEAR(m.stddev(), std::sqrt(2.5), 1e-6);
}

}  // namespace
}  // namespace rtf
