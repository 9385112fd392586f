// The neurofeedback value taken from the live decoder (docs/algorithms/decoding.md, "Decoded feedback"): each volume's
// decoded value (the target class's probability, or its decision value) averaged over the last N volumes (continuous
// protocol), or over the last N volumes of each regulation block, given once when the block ends (intermittent, the
// blocks of the ROI feedback's ConditionSchedule: the events shifted by the haemodynamic delay).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>

#include "core/feedback/condition_schedule.hpp"
#include "core/feedback/feedback_config.hpp"
#include "core/feedback/feedback_sample.hpp"

namespace rtf {

struct DecoderFeedbackOptions {
  FeedbackProtocol protocol = FeedbackProtocol::kContinuous;
  int64_t average_volumes = 1;  // N >= 1
};

class DecoderFeedback {
 public:
  // `schedule`: the run's conditions (required for the intermittent protocol; without it, volumes have no condition).
  // Throws std::invalid_argument for N < 1, or the intermittent protocol without a schedule.
  DecoderFeedback(DecoderFeedbackOptions options, std::optional<ConditionSchedule> schedule);

  // Volume `volume`'s sample from its decoded `value` (NaN: the decoder is off or warming up; `why` says which).
  // Volumes must come in increasing order (skipped ones are allowed: the average is over the values received).
  FeedbackSample process(int64_t volume, double value, const std::string& why = {});

 private:
  DecoderFeedbackOptions options_;
  std::optional<ConditionSchedule> schedule_;
  std::deque<std::pair<int64_t, double>> recent_;  // (volume, finite value), the last ones received
  int64_t previous_ = -1;
};

}  // namespace rtf
