// FeedbackRun: the neurofeedback value of one run, one call per TR. Takes the volume index, the ROI means of that
// volume (computed on the device), optionally the six motion parameters and a connectivity value, and returns a
// FeedbackSample. Processing per used ROI, as OpenNFT (Koush et al. 2017): cumulative-GLM detrending over every
// volume so far -> modified Kalman filter (optional) -> dynamic scaling (optional) -> percent signal change against
// the baseline condition (median over the baseline volumes, shifted by the haemodynamic delay), or the Pearson
// correlation of two ROIs over a sliding window. docs/algorithms/feedback.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/design/events.hpp"
#include "core/feedback/condition_schedule.hpp"
#include "core/feedback/cumulative_detrend.hpp"
#include "core/feedback/feedback_config.hpp"
#include "core/feedback/feedback_sample.hpp"
#include "core/feedback/feedback_stats.hpp"
#include "core/feedback/modified_kalman.hpp"

namespace rtf {

class FeedbackRun {
 public:
  // Validates the configuration and builds the schedule from the run's events (see ConditionSchedule). Throws
  // std::invalid_argument for an invalid configuration, unknown baseline or regulation conditions, or an
  // intermittent protocol without regulation blocks.
  FeedbackRun(FeedbackConfig config, std::vector<Event> events);

  // One TR. Bad input, by kind:
  // - thrown (std::invalid_argument): roi_means.size() != n_rois, motion neither empty nor six values, a negative
  //   volume; (std::out_of_range): volume >= n_volumes;
  // - NaN value with a status, state unchanged: a repeated or backwards volume index (kOutOfOrder); a non-finite mean
  //   of a used ROI (kNonFiniteRoi; the volume is left out, as if skipped; unused ROIs are not looked at);
  // - handled: a skipped volume (the index jumps) is left out of every fit and window, the Kalman prediction spans the
  //   gap, skipped_before counts it; missing or non-finite motion (with motion regressors) reuses the previous values
  //   (motion_imputed).
  FeedbackSample process(int64_t volume, std::span<const double> roi_means, std::span<const double> motion = {},
                         std::optional<double> connectivity = std::nullopt);

  const FeedbackConfig& config() const { return config_; }
  const ConditionSchedule& schedule() const { return schedule_; }
  int64_t volumes_accepted() const { return static_cast<int64_t>(volumes_.size()); }

 private:
  struct RoiState {
    ModifiedKalmanFilter kalman;
    RunningMoments detrended_moments;
    std::vector<double> filtered;  // per accepted volume
  };

  // Accepted-volume positions of the baseline reference (every baseline volume so far, or the last k blocks').
  std::vector<size_t> baseline_reference() const;
  // Positions of the accepted volumes with first <= index <= last.
  std::vector<size_t> positions_in(int64_t first, int64_t last) const;
  // The regulation block whose last volume lies in (previous, volume], -1 if none (the latest if several).
  int64_t ended_regulation_block(int64_t volume, int64_t previous) const;
  std::string next_block_end(int64_t volume) const;
  void compute_psc(FeedbackSample& s, int64_t previous);
  void compute_connectivity(FeedbackSample& s, int64_t previous, std::optional<double> provided);

  FeedbackConfig config_;
  ConditionSchedule schedule_;
  CumulativeDetrend detrend_;
  std::vector<RoiState> rois_;
  std::vector<int64_t> volumes_;            // accepted volume indices, increasing
  std::vector<int64_t> blocks_;             // schedule block per accepted volume (-1 none)
  std::vector<size_t> baseline_positions_;  // positions of the accepted baseline volumes
  std::array<double, 6> last_motion_{};
};

}  // namespace rtf
