// Bad input to FeedbackRun, each case with its documented outcome: wrong sizes, negative or too-large indices and
// invalid configurations throw; repeated or backwards indices and NaN/Inf ROI means give a NaN value with a status and
// leave the state untouched (later values equal those of a run that never saw them); a skipped volume is left out and
// counted, an intermittent block whose last volume is missing is reported at the next volume; missing motion is
// imputed; a missing or invalid provided connectivity, a constant ROI and a zero ROI give NaN with a reason.
// Values are compared exactly (same arithmetic) or to 1e-9 where stated.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/feedback/feedback_run.hpp"
#include "tests/feedback/feedback_fixtures.hpp"

namespace rtf {
namespace {

using feedback_test::block_events;
using feedback_test::exact_config;
using feedback_test::shifted_box;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Equal, or both NaN.
bool same(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

double signal(int64_t i) {
  return 1000.0 + 0.5 * static_cast<double>(i) + 20.0 * shifted_box(i, 2.0, 4.0) +
         std::sin(0.7 * static_cast<double>(i));
}

FeedbackConfig noisy_config(int64_t n) {
  FeedbackConfig c = exact_config(n);
  c.kalman.enabled = true;  // stateful stages on, so that a polluted state would show
  c.scaling.enabled = true;
  c.detrend.regressor_step = 0;
  return c;
}

TEST(FeedbackInput, SizesAndIndicesThatThrow) {
  FeedbackRun run(exact_config(50, 2), block_events(100.0));
  EXPECT_THROW((void)run.process(0, std::vector<double>{1000.0}), std::invalid_argument);  // 1 ROI mean, 2 expected
  EXPECT_THROW((void)run.process(0, std::vector<double>{1000.0, 1.0, 2.0}), std::invalid_argument);
  EXPECT_THROW((void)run.process(-1, std::vector<double>{1000.0, 1.0}), std::invalid_argument);
  EXPECT_THROW((void)run.process(50, std::vector<double>{1000.0, 1.0}), std::out_of_range);
  EXPECT_THROW((void)run.process(0, std::vector<double>{1000.0, 1.0}, std::vector<double>(5, 0.0)),
               std::invalid_argument);
  try {
    (void)run.process(3, std::vector<double>{1000.0});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("1 ROI means for volume 3, expected 2"), std::string::npos) << e.what();
  }
  // Nothing was accepted: the run starts cleanly afterwards.
  EXPECT_EQ(run.volumes_accepted(), 0);
  EXPECT_EQ(run.process(0, std::vector<double>{1000.0, 1.0}).skipped_before, 0);
}

TEST(FeedbackInput, InvalidConfigurationsThrow) {
  const std::vector<Event> events = block_events(100.0);
  const auto fails = [&](auto edit) {
    FeedbackConfig c = exact_config(50, 2);
    edit(c);
    EXPECT_THROW((void)FeedbackRun(c, events), std::invalid_argument);
  };
  fails([](FeedbackConfig& c) { c.tr_s = 0.0; });
  fails([](FeedbackConfig& c) { c.n_volumes = 0; });
  fails([](FeedbackConfig& c) { c.rois = {2}; });
  fails([](FeedbackConfig& c) { c.rois = {}; });
  fails([](FeedbackConfig& c) { c.rois = {1, 1}; });
  fails([](FeedbackConfig& c) { c.mode = FeedbackMode::kDifferentialPsc; });  // one ROI
  fails([](FeedbackConfig& c) { c.baseline_condition = "fixation"; });        // not in the events
  fails([](FeedbackConfig& c) { c.regulation_conditions = {"down"}; });
  fails([](FeedbackConfig& c) { c.hrf_delay_s = -2.0; });
  fails([](FeedbackConfig& c) { c.detrend.drift_order = 5; });
  fails([](FeedbackConfig& c) { c.connectivity_window = 2; });
  fails([](FeedbackConfig& c) {
    c.min_value = 1.0;
    c.max_value = 0.0;
  });
  FeedbackConfig c = exact_config(50, 2);
  c.protocol = FeedbackProtocol::kIntermittent;
  EXPECT_THROW((void)FeedbackRun(c, {}), std::invalid_argument);  // no regulation block
  EXPECT_NO_THROW((void)FeedbackRun(exact_config(50, 2), {}));    // continuous with rest only is fine
}

TEST(FeedbackInput, RepeatedAndBackwardsIndicesAreIgnored) {
  const int64_t n = 80;
  FeedbackRun clean(noisy_config(n), block_events(2.0 * n)), dirty(noisy_config(n), block_events(2.0 * n));
  for (int64_t i = 0; i < n; ++i) {
    const FeedbackSample expected = clean.process(i, std::vector<double>{signal(i)});
    const FeedbackSample got = dirty.process(i, std::vector<double>{signal(i)});
    EXPECT_TRUE(same(got.value, expected.value)) << i;  // bit-identical: the ignored calls changed nothing
    EXPECT_EQ(got.status, expected.status) << i;
    EXPECT_EQ(got.rois[0].filtered, expected.rois[0].filtered) << i;
    EXPECT_TRUE(same(got.rois[0].scaled, expected.rois[0].scaled)) << i;
    if (i % 10 == 5) {
      const FeedbackSample repeat = dirty.process(i, std::vector<double>{signal(i) + 50.0});
      EXPECT_EQ(repeat.status, FeedbackStatus::kOutOfOrder);
      EXPECT_TRUE(std::isnan(repeat.value));
      EXPECT_NE(repeat.reason.find("repeated or out of order"), std::string::npos);
      const FeedbackSample backwards = dirty.process(i - 3, std::vector<double>{signal(i - 3)});
      EXPECT_EQ(backwards.status, FeedbackStatus::kOutOfOrder);
    }
  }
  EXPECT_EQ(dirty.volumes_accepted(), n);
}

TEST(FeedbackInput, NonFiniteRoiMeanLeavesTheVolumeOut) {
  // ROI 0 used, ROI 1 unused. A NaN (or Inf) in ROI 0 gives NaN with kNonFiniteRoi; the run continues as if that
  // volume had been skipped (values equal a run that skips it); NaN in ROI 1 is not looked at.
  const int64_t n = 60;
  FeedbackConfig c = noisy_config(n);
  c.n_rois = 2;
  FeedbackRun with_nan(c, block_events(2.0 * n)), skipping(c, block_events(2.0 * n));
  for (int64_t i = 0; i < n; ++i) {
    const bool bad = i == 20 || i == 33;
    const double roi0 = i == 20 ? kNaN : (i == 33 ? std::numeric_limits<double>::infinity() : signal(i));
    const FeedbackSample s = with_nan.process(i, std::vector<double>{roi0, kNaN});
    if (bad) {
      EXPECT_EQ(s.status, FeedbackStatus::kNonFiniteRoi) << i;
      EXPECT_TRUE(std::isnan(s.value));
      EXPECT_NE(s.reason.find("ROI 0"), std::string::npos) << s.reason;
      continue;
    }
    const FeedbackSample e = skipping.process(i, std::vector<double>{signal(i), 0.0});
    EXPECT_EQ(s.status, e.status) << i;
    EXPECT_TRUE(same(s.value, e.value)) << i;
    EXPECT_EQ(s.rois[0].filtered, e.rois[0].filtered) << i;
    EXPECT_EQ(s.skipped_before, (i == 21 || i == 34) ? 1 : 0) << i;
  }
  // A NaN ROI mean can be resent with a finite value (the volume was never accepted).
  FeedbackRun resend(c, block_events(2.0 * n));
  EXPECT_EQ(resend.process(0, std::vector<double>{kNaN, 0.0}).status, FeedbackStatus::kNonFiniteRoi);
  EXPECT_EQ(resend.process(0, std::vector<double>{1000.0, 0.0}).status, FeedbackStatus::kNotEnoughBaseline);
  EXPECT_EQ(resend.volumes_accepted(), 1);
}

TEST(FeedbackInput, SkippedVolumesAreLeftOutAndCounted) {
  // Volumes 30..33 never arrive. Exact configuration: the PSC stays exact (1e-9) because every fit uses the true
  // volume indices; skipped_before says 4 at volume 34. With the Kalman filter on, values stay finite.
  const int64_t n = 90;
  FeedbackRun exact(exact_config(n), block_events(2.0 * n)), filtered(noisy_config(n), block_events(2.0 * n));
  for (int64_t i = 0; i < n; ++i) {
    if (i >= 30 && i <= 33) continue;
    const double level = 1000.0 + 0.5 * static_cast<double>(i), box = shifted_box(i, 2.0, 4.0);
    const FeedbackSample s = exact.process(i, std::vector<double>{level + 20.0 * box});
    const FeedbackSample f = filtered.process(i, std::vector<double>{signal(i)});
    EXPECT_EQ(s.skipped_before, i == 34 ? 4 : 0);
    if (i < 4) continue;
    ASSERT_EQ(s.status, FeedbackStatus::kOk) << s.reason;
    EXPECT_NEAR(s.value, 100.0 * 20.0 * box / level, 1e-9) << i;
    ASSERT_EQ(f.status, FeedbackStatus::kOk) << i;
    EXPECT_TRUE(std::isfinite(f.value)) << i;
  }
}

TEST(FeedbackInput, IntermittentBlockEndMissingIsReportedAtTheNextVolume) {
  // The first regulation block ends at volume 21; 20..22 are skipped, so its value comes with volume 23.
  const int64_t n = 60;
  FeedbackConfig c = exact_config(n);
  c.protocol = FeedbackProtocol::kIntermittent;
  FeedbackRun run(c, block_events(2.0 * n));
  for (int64_t i = 0; i < 30; ++i) {
    if (i >= 20 && i <= 22) continue;
    const double level = 1000.0 + 0.5 * static_cast<double>(i);
    const FeedbackSample s = run.process(i, std::vector<double>{level + 20.0 * shifted_box(i, 2.0, 4.0)});
    if (i == 23) {
      ASSERT_EQ(s.status, FeedbackStatus::kOk) << s.reason;
      EXPECT_TRUE(s.block_end);
      EXPECT_EQ(s.regulation_block, 0);
      EXPECT_NEAR(s.value, 100.0 * 20.0 / level, 1e-9);
    } else {
      EXPECT_EQ(s.status, FeedbackStatus::kNotBlockEnd) << i;
    }
  }
}

TEST(FeedbackInput, MissingMotionIsImputed) {
  FeedbackConfig c = exact_config(40);
  c.detrend.motion_regressors = true;
  FeedbackRun run(c, block_events(80.0));
  const std::vector<double> motion{0.1, 0.0, -0.1, 0.01, 0.0, 0.02};
  EXPECT_FALSE(run.process(0, std::vector<double>{1000.0}, motion).motion_imputed);
  EXPECT_TRUE(run.process(1, std::vector<double>{1001.0}).motion_imputed);
  std::vector<double> bad = motion;
  bad[2] = kNaN;
  const FeedbackSample s = run.process(2, std::vector<double>{1000.5}, bad);
  EXPECT_TRUE(s.motion_imputed);
  EXPECT_TRUE(std::isfinite(s.rois[0].detrended));
}

TEST(FeedbackInput, ConnectivityAndDegenerateSignals) {
  FeedbackConfig c;
  c.mode = FeedbackMode::kConnectivity;
  c.connectivity_source = ConnectivitySource::kProvided;
  c.tr_s = 1.0;
  c.n_volumes = 10;
  c.n_rois = 2;
  c.rois = {0, 1};
  FeedbackRun provided(c, {});
  const std::vector<double> rois{1000.0, 900.0};
  FeedbackSample s = provided.process(0, rois);
  EXPECT_EQ(s.status, FeedbackStatus::kMissingConnectivity);
  EXPECT_FALSE(s.reason.empty());
  EXPECT_EQ(provided.process(1, rois, {}, 1.5).status, FeedbackStatus::kMissingConnectivity);
  EXPECT_EQ(provided.process(2, rois, {}, kNaN).status, FeedbackStatus::kMissingConnectivity);
  EXPECT_EQ(provided.process(3, rois, {}, -0.25).value, -0.25);

  // A constant ROI: the correlation is undefined.
  c.connectivity_source = ConnectivitySource::kRoiTimeCourses;
  c.connectivity_window = 4;
  FeedbackRun constant(c, {});
  for (int64_t i = 0; i < 10; ++i)
    s = constant.process(i, std::vector<double>{1000.0 + static_cast<double>(i % 3), 500.0});
  EXPECT_EQ(s.status, FeedbackStatus::kDegenerate);
  EXPECT_NE(s.reason.find("constant"), std::string::npos) << s.reason;

  // An ROI whose mean is 0 (e.g. outside the brain): no percentage.
  FeedbackRun zero(exact_config(20), {});
  for (int64_t i = 0; i < 10; ++i) s = zero.process(i, std::vector<double>{0.0});
  EXPECT_EQ(s.status, FeedbackStatus::kDegenerate);
  EXPECT_TRUE(std::isnan(s.value));
}

}  // namespace
}  // namespace rtf
