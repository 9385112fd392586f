// The respiration filter of the motion parameters and FIRMM's usable-data tally against the numpy/scipy reference
// (tests/qa/qa_reference.py: scipy.signal.iirnotch / butter applied causally twice, Power's FD, FIRMM's and Power
// 2014's censoring, the per-run prediction), on 40 frames at TR 0.8 s with a drift, a 0.35 Hz respiration sway, a slow
// rotation and a 1 mm spike: FD sums and single frames within 1e-9 relative for no filter, the notch and the low-pass;
// kept frames at 0.2 / 0.3 / 0.5 mm and the minutes to a target equal; bad options refused.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "core/qa/motion_filter.hpp"
#include "core/qa/usable_frames.hpp"

namespace rtf {
namespace {

constexpr int kFrames = 40;
constexpr double kTr = 0.8;

std::vector<RigidParams> motion() {
  std::vector<RigidParams> p(kFrames);
  for (int f = 0; f < kFrames; ++f) {
    const double t = f * kTr;
    p[static_cast<size_t>(f)].translation_mm = {0.01 * t, 0.3 * std::sin(2 * std::numbers::pi * 0.35 * t), 0.0};
    p[static_cast<size_t>(f)].rotation_deg = {0.2 * std::sin(2 * std::numbers::pi * 0.05 * t), 0.0, 0.0};
  }
  p[20].translation_mm[2] += 1.0;
  return p;
}

std::vector<double> filtered_fd(const FdFilterOptions& options) {
  MotionFilter filter(options, kTr);
  std::vector<double> fd;
  RigidParams previous;
  for (const RigidParams& raw : motion()) {
    const RigidParams p = filter.next(raw);
    fd.push_back(fd.empty() ? 0.0 : framewise_displacement(previous, p, 50.0));
    previous = p;
  }
  return fd;
}

TEST(UsableFrames, FilteredFdMatchesScipy) {
  // qa_reference.firmm_filter(p, 0.8, kind, zero_phase=False) then framewise_displacement(radius 50, degrees):
  // the sum over frames, frames 5, 20 and 39.
  struct Want {
    FdFilterKind kind;
    double sum, f5, f20, f39;
  };
  const Want wants[] = {
      {FdFilterKind::kNone, 14.783217324315915, 0.05565620924440434, 1.4639815399483782, 0.13700294974133265},
      {FdFilterKind::kNotch, 5.651749736846684, 0.08257800210965408, 0.629451296560169, 0.08090290047532905},
      {FdFilterKind::kLowpass, 1.5097098338692534, 0.016810882984500744, 0.0504738889561854, 0.025397124729315428}};
  for (const Want& w : wants) {
    FdFilterOptions options;
    options.kind = w.kind;
    const std::vector<double> fd = filtered_fd(options);
    double sum = 0;
    for (const double x : fd) sum += x;
    const auto near = [](double got, double want) { return std::abs(got - want) <= 1e-9 * std::abs(want); };
    EXPECT_TRUE(near(sum, w.sum)) << static_cast<int>(w.kind) << ": " << sum << " vs " << w.sum;
    EXPECT_TRUE(near(fd[5], w.f5) && near(fd[20], w.f20) && near(fd[39], w.f39))
        << static_cast<int>(w.kind) << ": " << fd[5] << " " << fd[20] << " " << fd[39];
  }
}

TEST(UsableFrames, TallyAndPredictionMatchTheReference) {
  const std::vector<double> fd = filtered_fd({});
  // qa_reference.usable_frames(fd, 0.8, (0.2, 0.3, 0.5), rule) and predict_minutes_to_target.
  const auto firmm = usable_tally(fd, kTr, {0.2, 0.3, 0.5}, 12.5, CensorRule::kFirmm);
  EXPECT_EQ(firmm[0].frames, 10);
  EXPECT_EQ(firmm[1].frames, 16);
  EXPECT_EQ(firmm[2].frames, 36);
  EXPECT_DOUBLE_EQ(firmm[1].minutes, 16 * kTr / 60);
  EXPECT_NEAR(firmm[1].minutes_to_target, 30.716666666666665, 1e-12);
  EXPECT_EQ(usable_tally(fd, kTr, {0.5}, 0.3, CensorRule::kFirmm)[0].minutes_to_target, 0.0) << "target reached";
  const auto power = usable_tally(fd, kTr, {0.2, 0.3, 0.5}, 12.5, CensorRule::kPower2014);
  EXPECT_EQ(power[0].frames, 0);
  EXPECT_EQ(power[1].frames, 0);
  EXPECT_EQ(power[2].frames, 25);
  EXPECT_TRUE(std::isinf(power[1].minutes_to_target)) << "nothing kept yet";
  EXPECT_EQ(usable_tally({}, kTr, {0.2}, 12.5, CensorRule::kFirmm)[0].frames, 0);
}

TEST(UsableFrames, PowerRuleNeighboursAndShortRuns) {
  // Frame 6 over: 5, 6, 7, 8 censored; the run 0..4 (5 frames) kept; 9..12 (4 frames) too short; NaN censored.
  std::vector<double> fd(14, 0.1);
  fd[6] = 0.9;
  fd[13] = std::numeric_limits<double>::quiet_NaN();
  const std::vector<bool> keep = kept_frames(fd, 0.5, CensorRule::kPower2014);
  const std::vector<bool> want{true,  true,  true,  true,  true,  false, false,
                               false, false, false, false, false, false, false};
  EXPECT_EQ(keep, want);
  const std::vector<bool> firmm = kept_frames(fd, 0.5, CensorRule::kFirmm);
  EXPECT_EQ(std::count(firmm.begin(), firmm.end(), true), 12);
  EXPECT_FALSE(kept_frames({0.2}, 0.2, CensorRule::kFirmm)[0]) << "FIRMM keeps FD strictly below the threshold";
  EXPECT_TRUE(kept_frames(std::vector<double>(5, 0.2), 0.2, CensorRule::kPower2014)[0]) << "Power censors FD above it";
}

TEST(UsableFrames, BadOptions) {
  EXPECT_THROW(parse_fd_filter("bandstop"), std::invalid_argument);
  EXPECT_THROW(parse_censor_rule("scrub"), std::invalid_argument);
  EXPECT_THROW(MotionFilter({.kind = FdFilterKind::kNotch}, 0.0), std::invalid_argument);
  EXPECT_THROW(MotionFilter({.kind = FdFilterKind::kNotch, .band_low_bpm = 30, .band_high_bpm = 20}, 0.8),
               std::invalid_argument);
  // At TR 2 s (Nyquist 0.25 Hz) 0.25 Hz folds onto Nyquist itself: no low-pass there.
  EXPECT_THROW(MotionFilter({.kind = FdFilterKind::kLowpass, .cutoff_bpm = 15}, 2.0), std::invalid_argument);
  EXPECT_NO_THROW(MotionFilter({.kind = FdFilterKind::kNotch}, 2.0)) << "ABCD's band folds below Nyquist at TR 2 s";
  EXPECT_THROW(usable_tally({0.1}, 0.0, {0.2}, 12.5, CensorRule::kFirmm), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
