// DecoderFeedback: the recent finite values kept in order; the continuous mean over the window of the last N volume
// indices, the intermittent mean over the ended block's last N.
#include "core/feedback/decoder_feedback.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace rtf {

DecoderFeedback::DecoderFeedback(DecoderFeedbackOptions options, std::optional<ConditionSchedule> schedule)
    : options_(options), schedule_(std::move(schedule)) {
  if (options_.average_volumes < 1) {
    throw std::invalid_argument(
        fmt::format("decoded feedback: average over {} volumes (1 or more)", options_.average_volumes));
  }
  if (options_.protocol == FeedbackProtocol::kIntermittent && !schedule_) {
    throw std::invalid_argument("decoded feedback: the intermittent protocol needs the run's events and length");
  }
}

FeedbackSample DecoderFeedback::process(int64_t volume, double value, const std::string& why) {
  FeedbackSample s;
  s.volume = volume;
  if (schedule_ && volume >= 0 && volume < schedule_->n_volumes()) {
    s.condition = schedule_->condition(volume);
    s.block = schedule_->block(volume);
  }
  const auto fail = [&](FeedbackStatus status, std::string reason) {
    s.status = status;
    s.reason = std::move(reason);
    s.value = FeedbackSample::kNaN;
    return s;
  };
  if (volume <= previous_)
    return fail(FeedbackStatus::kOutOfOrder, fmt::format("volume {} after {}", volume, previous_));
  const int64_t previous = previous_;
  s.skipped_before = previous >= 0 ? volume - previous - 1 : 0;
  previous_ = volume;
  if (std::isfinite(value)) recent_.emplace_back(volume, value);
  const int64_t n = options_.average_volumes;
  const auto mean_over = [&](int64_t first, int64_t last, int64_t& count) {
    double sum = 0.0;
    count = 0;
    for (const auto& [v, x] : recent_) {
      if (v >= first && v <= last) {
        sum += x;
        ++count;
      }
    }
    return count > 0 ? sum / static_cast<double>(count) : FeedbackSample::kNaN;
  };
  if (options_.protocol == FeedbackProtocol::kContinuous) {
    while (!recent_.empty() && recent_.front().first <= volume - n) recent_.pop_front();
    if (!std::isfinite(value)) return fail(FeedbackStatus::kDecoderOff, why.empty() ? "no decoded value" : why);
    int64_t count = 0;
    s.value = mean_over(volume - n + 1, volume, count);
    if (volume + 1 < n) return fail(FeedbackStatus::kNotEnoughVolumes, fmt::format("{} of {} volumes", volume + 1, n));
    return s;
  }
  // Intermittent: the regulation block that ended since the previous volume.
  int64_t ended = -1;
  const std::vector<ConditionBlock>& blocks = schedule_->blocks();
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (blocks[b].condition == VolumeCondition::kRegulation && blocks[b].last > previous && blocks[b].last <= volume) {
      ended = static_cast<int64_t>(b);
    }
  }
  if (ended < 0) {
    // Keep what a coming block end may need: at most its last N volumes.
    while (recent_.size() > static_cast<size_t>(n)) recent_.pop_front();
    return fail(FeedbackStatus::kNotBlockEnd, "intermittent decoded feedback: a value at each regulation block's end");
  }
  const ConditionBlock& b = blocks[static_cast<size_t>(ended)];
  s.block_end = true;
  s.regulation_block = schedule_->ordinal(ended);
  int64_t count = 0;
  s.value = mean_over(std::max(b.first, b.last - n + 1), b.last, count);
  if (count == 0) {
    return fail(FeedbackStatus::kDecoderOff, fmt::format("no decoded value in the last {} volume(s) of the block "
                                                         "ending at volume {}",
                                                         n, b.last));
  }
  return s;
}

}  // namespace rtf
