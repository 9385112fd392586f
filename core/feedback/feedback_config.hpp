// Configuration of the neurofeedback value computed every TR from ROI means: what the value is (ROI percent signal
// change against the baseline condition, differential ROI A - B, or the connectivity of two ROIs), when it is given
// (every TR, or once at the end of each regulation block), and the processing chain after OpenNFT (Koush et al.
// 2017): cumulative-GLM detrending, the modified Kalman filter of Koush et al. 2012, dynamic scaling.
// Defaults follow OpenNFT where it has one. docs/algorithms/feedback.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rtf {

enum class FeedbackMode {
  kRoiPsc,           // percent signal change of the ROI (several ROIs: their mean) against the baseline condition
  kDifferentialPsc,  // PSC of ROI A minus PSC of ROI B
  kConnectivity,     // Pearson correlation of ROIs A and B over a sliding window (or a value given per TR)
};

enum class FeedbackProtocol {
  kContinuous,    // a value every TR
  kIntermittent,  // one value at the end of each regulation block (after the haemodynamic delay)
};

// Task regressors fitted by the detrending GLM beside the nuisance columns, so that the constant and the trend do
// not absorb the regulation effect (OpenNFT fits the SPM design too).
enum class TaskModel {
  kNone,
  kHrf,            // SPM's canonical-HRF regressor per condition (core/design, SPM's microtime defaults)
  kDelayedBoxcar,  // 1 while the condition is on at the volume's time minus the haemodynamic delay, else 0
};

enum class ConnectivitySource {
  kRoiTimeCourses,  // computed here from the processed time courses of ROIs A and B
  kProvided,        // the Pearson r handed to FeedbackRun::process() each TR (e.g. computed on the device)
};

struct DetrendOptions {
  int drift_order = 1;             // Legendre drift P_1..P_order of the volume index over the run (1: linear), 0..3
  bool motion_regressors = false;  // the six motion parameters as regressors (each TR then passes them)
  TaskModel task_model = TaskModel::kHrf;
  bool retain_task_fit = true;  // the fitted task effect stays in the detrended signal (OpenNFT); false removes it
  // Stepwise entry of the columns (OpenNFT): with fewer than `step` volumes only the constant is fitted, with fewer
  // than 2 step the constant and the drift, from 2 step on every column. 0: step = the full model's column count.
  int64_t regressor_step = 0;
};

struct KalmanOptions {
  bool enabled = true;
  // With s the standard deviation of the ROI's detrended values so far: process noise Q = process_noise s^2,
  // measurement noise R = measurement_noise s^2, and an update |K (y - prediction)| above spike_threshold s marks
  // a spike (Koush et al. 2012; OpenNFT's constants).
  double process_noise = 0.25;
  double measurement_noise = 1.0;
  double spike_threshold = 0.9;
};

struct ScalingOptions {
  bool enabled = false;
  int64_t window_volumes = 0;     // lagging window for the limits; 0: every volume so far (OpenNFT's default)
  int64_t robust_after = 20;      // from this many values in the window the limits are robust (below: min and max)
  double robust_fraction = 0.05;  // robust limits: medians of the largest and of the smallest 5% of the window
  double min_half_range = 0.005;  // the limits reach at least -+ this fraction of the signal level (OpenNFT)
};

struct FeedbackConfig {
  FeedbackMode mode = FeedbackMode::kRoiPsc;
  FeedbackProtocol protocol = FeedbackProtocol::kContinuous;
  double tr_s = 0.0;          // repetition time (required)
  int64_t n_volumes = 0;      // volumes in the run (required): indices 0..n_volumes-1
  int64_t n_rois = 0;         // ROI means handed in per volume (required)
  std::vector<int64_t> rois;  // the ROIs used: kRoiPsc one or more (averaged); kDifferentialPsc, kConnectivity {A, B}
  std::string baseline_condition;                  // a trial type of events.tsv; empty: the rest periods
  std::vector<std::string> regulation_conditions;  // empty: every trial type but the baseline condition
  double hrf_delay_s = 5.0;                        // volume i belongs to the condition on at i TR - hrf_delay_s
  int64_t baseline_blocks = 0;  // baseline reference: 0 every baseline volume so far; k the last k baseline blocks
  int64_t min_baseline_volumes = 3;
  DetrendOptions detrend;
  KalmanOptions kalman;
  ScalingOptions scaling;
  ConnectivitySource connectivity_source = ConnectivitySource::kRoiTimeCourses;
  int64_t connectivity_window = 20;      // volumes (by index: the last N indices, missing ones left out)
  int64_t connectivity_min_volumes = 0;  // present in the window for a value; 0: max(3, ceil(N / 2))
  bool fisher_z = false;                 // report atanh(r), r clamped to +-(1 - 1e-12)
  double gain = 1.0;                     // value = gain * (PSC, scaled difference, r or z)
  std::optional<double> min_value;       // clamp of the final value (e.g. OpenNFT's 0..MaxFeedbackVal)
  std::optional<double> max_value;
};

// Throws std::invalid_argument naming the first invalid field (TR, sizes, ROI indices, options out of range).
void validate_feedback_config(const FeedbackConfig& config);

std::string_view feedback_mode_name(FeedbackMode mode);
std::string_view feedback_protocol_name(FeedbackProtocol protocol);

}  // namespace rtf
