// Decoded feedback (core/feedback/decoder_feedback.hpp): the continuous mean over the last N volumes' decoded values
// (a volume not decoded is left out of the mean and gets no value itself), the intermittent mean over each regulation
// block's last N volumes given once at the block's end (also when the end volume itself was skipped), statuses, and
// the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/feedback/decoder_feedback.hpp"

namespace rtf {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(DecoderFeedback, ContinuousMeanOverTheLastVolumes) {
  DecoderFeedback f({FeedbackProtocol::kContinuous, 3}, std::nullopt);
  const std::vector<double> values{0.1, 0.2, kNaN, 0.4, 0.5, 0.6, 0.9};
  std::vector<FeedbackSample> s;
  for (size_t v = 0; v < values.size(); ++v) s.push_back(f.process(static_cast<int64_t>(v), values[v], "warming up"));
  EXPECT_EQ(s[0].status, FeedbackStatus::kNotEnoughVolumes);
  EXPECT_EQ(s[1].status, FeedbackStatus::kNotEnoughVolumes);
  EXPECT_EQ(s[2].status, FeedbackStatus::kDecoderOff);
  EXPECT_EQ(s[2].reason, "warming up");
  EXPECT_TRUE(std::isnan(s[2].value));
  EXPECT_EQ(s[3].status, FeedbackStatus::kOk);
  EXPECT_DOUBLE_EQ(s[3].value, (0.2 + 0.4) / 2);  // volumes 1..3, volume 2 not decoded
  EXPECT_DOUBLE_EQ(s[4].value, (0.4 + 0.5) / 2);
  EXPECT_DOUBLE_EQ(s[5].value, (0.4 + 0.5 + 0.6) / 3);
  EXPECT_DOUBLE_EQ(s[6].value, (0.5 + 0.6 + 0.9) / 3);
  EXPECT_EQ(f.process(6, 0.3).status, FeedbackStatus::kOutOfOrder);
  const FeedbackSample skipped = f.process(9, 0.3);  // volumes 7, 8 skipped: the window is 7..9
  EXPECT_EQ(skipped.skipped_before, 2);
  EXPECT_DOUBLE_EQ(skipped.value, 0.3);
}

// TR 1 s, delay 2 s, "up" blocks at 0-4 s and 10-14 s: volumes 2..5 and 12..15 are regulation, the rest baseline.
TEST(DecoderFeedback, IntermittentMeanOverABlocksLastVolumesAtItsEnd) {
  const std::vector<Event> events{{0.0, 4.0, "up", std::nullopt}, {10.0, 4.0, "up", std::nullopt}};
  ConditionSchedule schedule(events, 1.0, 20, "", {}, 2.0);
  DecoderFeedback f({FeedbackProtocol::kIntermittent, 2}, schedule);
  std::vector<FeedbackSample> s;
  for (int64_t v = 0; v < 20; ++v) {
    if (v == 15) continue;  // the second block's last volume is skipped: its value comes at volume 16
    s.push_back(f.process(v, 0.1 * static_cast<double>(v)));
  }
  for (const FeedbackSample& x : s) {
    if (x.volume == 5) {
      EXPECT_TRUE(x.block_end);
      EXPECT_EQ(x.status, FeedbackStatus::kOk);
      EXPECT_NEAR(x.value, (0.4 + 0.5) / 2, 1e-15);
      EXPECT_EQ(x.regulation_block, 0);
      EXPECT_EQ(x.condition, VolumeCondition::kRegulation);
    } else if (x.volume == 16) {
      EXPECT_TRUE(x.block_end);
      EXPECT_NEAR(x.value, 1.4, 1e-15);  // volumes 14 and 15 of the block: 15 was not received
      EXPECT_EQ(x.regulation_block, 1);
    } else {
      EXPECT_EQ(x.status, FeedbackStatus::kNotBlockEnd) << x.volume;
      EXPECT_TRUE(std::isnan(x.value));
    }
  }
  EXPECT_THROW(DecoderFeedback({FeedbackProtocol::kIntermittent, 2}, std::nullopt), std::invalid_argument);
  EXPECT_THROW(DecoderFeedback({FeedbackProtocol::kContinuous, 0}, std::nullopt), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
