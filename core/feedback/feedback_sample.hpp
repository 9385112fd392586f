// What FeedbackRun returns each TR: the neurofeedback value, every intermediate step per ROI (raw, detrended,
// filtered, scaled, percent signal change), the volume's condition and block, and a status that says why the value
// is NaN when it is. docs/algorithms/feedback.md.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/feedback/condition_schedule.hpp"

namespace rtf {

enum class FeedbackStatus {
  kOk,
  kNotEnoughBaseline,    // fewer baseline volumes so far than min_baseline_volumes
  kNotEnoughVolumes,     // too few volumes in the connectivity window or in the regulation block
  kNotBlockEnd,          // intermittent protocol: a value comes only at the end of a regulation block
  kNonFiniteRoi,         // a used ROI's mean is NaN or infinite (e.g. an ROI with no voxels): volume left out
  kOutOfOrder,           // the volume index repeats or goes backwards: volume ignored, state unchanged
  kMissingConnectivity,  // provided connectivity: no value, or not a finite r in [-1, 1]
  kDegenerate,           // a series with zero variance (correlation) or a signal level <= 0 (percent)
  kDecoderOff,           // decoded feedback: the decoder is off, or not ready yet, for this volume
};

std::string_view feedback_status_name(FeedbackStatus status);

struct RoiSample {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  int64_t roi = -1;           // index into the ROI means handed in
  double raw = kNaN;          // the ROI mean as given
  double detrended = kNaN;    // raw minus the cumulative GLM's nuisance fit (constant, drift, motion)
  double filtered = kNaN;     // after the modified Kalman filter (= detrended when the filter is off)
  double scaled = kNaN;       // in [0, 1] between the dynamic limits (NaN when scaling is off)
  double scale_lower = kNaN;  // the limits used (NaN when scaling is off)
  double scale_upper = kNaN;
  double level = kNaN;     // fitted constant + drift at this volume: the denominator of the percentage
  double baseline = kNaN;  // median of the filtered signal over the baseline reference volumes
  double psc = kNaN;       // this ROI's contribution: percent signal change, or the scaled difference
  bool spike = false;      // the Kalman filter replaced this sample by its prediction
};

struct FeedbackSample {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  int64_t volume = -1;
  VolumeCondition condition = VolumeCondition::kNone;
  int64_t block = -1;             // index into the schedule's blocks, -1 for none
  int64_t regulation_block = -1;  // ordinal of the regulation block (this volume's, or the one just ended)
  bool block_end = false;         // intermittent: this value closes regulation block `regulation_block`

  double value = kNaN;         // the neurofeedback value: gain * (PSC | scaled difference | r | z), clamped
  double connectivity = kNaN;  // connectivity mode: Pearson r before Fisher z and gain
  FeedbackStatus status = FeedbackStatus::kOk;
  std::string reason;  // empty when kOk

  int64_t skipped_before = 0;    // volumes missing between the previous accepted volume and this one
  int64_t baseline_volumes = 0;  // baseline reference volumes used
  bool motion_imputed = false;   // motion regressors on but no (finite) motion this TR: the previous values used
  bool any_spike = false;        // some ROI's sample was replaced by the Kalman prediction
  std::vector<RoiSample> rois;   // one per configured ROI, in config order
};

}  // namespace rtf
