// Which condition each volume of a neurofeedback run belongs to, from the run's BIDS events and the TR, shifted by
// the haemodynamic delay: volume i shows the response to what was on at i TR - delay. Volumes are grouped into blocks
// (one per event; the rest periods form blocks of their own), which the intermittent feedback and the baseline
// reference use; the task regressors of the detrending GLM come from the same events. docs/algorithms/feedback.md.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/design/events.hpp"
#include "core/feedback/feedback_config.hpp"

namespace rtf {

enum class VolumeCondition {
  kNone,        // before the run in shifted time, or (with a named baseline) covered by no event
  kBaseline,    // the baseline condition (or rest, when the baseline is not named)
  kRegulation,  // a regulation condition
  kOther,       // another trial type (e.g. instructions, feedback display)
};

std::string_view volume_condition_name(VolumeCondition condition);

struct ConditionBlock {
  VolumeCondition condition = VolumeCondition::kNone;
  std::string trial_type;  // empty for rest
  int64_t event = -1;      // index into the events, -1 for rest
  int64_t first = 0;       // first and last volume, inclusive
  int64_t last = 0;
};

class ConditionSchedule {
 public:
  // Labels volumes 0..n_volumes-1. A volume's shifted time s = i tr - delay belongs to an event when
  // onset <= s < onset + duration (events of duration 0 cover no volume). Priority when events overlap: regulation,
  // then other trial types, then the baseline condition. Uncovered s >= 0 is baseline when `baseline_condition` is
  // empty (rest), otherwise kNone; uncovered s < 0 is kNone. Regulation conditions: `regulation_conditions`, or when
  // empty every trial type but the baseline. Throws std::invalid_argument for TR <= 0, n_volumes <= 0, delay < 0, a
  // named baseline or regulation condition without events, or a condition both baseline and regulation.
  ConditionSchedule(std::vector<Event> events, double tr_s, int64_t n_volumes, std::string baseline_condition,
                    const std::vector<std::string>& regulation_conditions, double hrf_delay_s);

  int64_t n_volumes() const { return static_cast<int64_t>(block_of_.size()); }
  double tr_s() const { return tr_s_; }
  double hrf_delay_s() const { return hrf_delay_s_; }

  // Per volume (0 <= volume < n_volumes, else std::out_of_range).
  VolumeCondition condition(int64_t volume) const;
  int64_t block(int64_t volume) const;  // index into blocks(), -1 for kNone volumes

  // Blocks in volume order: maximal runs of consecutive volumes with the same label and event.
  const std::vector<ConditionBlock>& blocks() const { return blocks_; }
  // Ordinal of a regulation (or baseline) block among the blocks of its condition (0-based), -1 otherwise.
  int64_t ordinal(int64_t block) const { return ordinal_.at(static_cast<size_t>(block)); }

  const std::vector<std::string>& regulation_conditions() const { return regulation_; }
  // The trial types that the detrending GLM models as task columns: every trial type but the baseline condition.
  const std::vector<std::string>& task_conditions() const { return task_; }
  // n_volumes x task_conditions().size(): kHrf SPM's canonical-HRF regressors (design defaults: microtime 16, onset
  // 8, no modulation), kDelayedBoxcar 1 where the condition covers the shifted time, kNone no columns.
  Eigen::MatrixXd task_regressors(TaskModel model) const;

 private:
  std::vector<Event> events_;
  double tr_s_;
  double hrf_delay_s_;
  std::string baseline_;
  std::vector<std::string> regulation_;
  std::vector<std::string> task_;
  std::vector<int64_t> block_of_;
  std::vector<ConditionBlock> blocks_;
  std::vector<int64_t> ordinal_;
};

}  // namespace rtf
