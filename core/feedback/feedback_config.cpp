// Validation and names for the neurofeedback configuration.
#include "core/feedback/feedback_config.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace rtf {
namespace {

[[noreturn]] void invalid(const std::string& what) {
  throw std::invalid_argument("feedback configuration: " + what);
}

bool finite_nonnegative(double x) {
  return std::isfinite(x) && x >= 0.0;
}

}  // namespace

void validate_feedback_config(const FeedbackConfig& c) {
  if (!(std::isfinite(c.tr_s) && c.tr_s > 0.0)) invalid(fmt::format("tr_s must be > 0 (got {})", c.tr_s));
  if (c.n_volumes <= 0) invalid(fmt::format("n_volumes must be > 0 (got {})", c.n_volumes));
  if (c.n_rois <= 0) invalid(fmt::format("n_rois must be > 0 (got {})", c.n_rois));
  if (c.rois.empty()) invalid("rois is empty");
  if (c.mode != FeedbackMode::kRoiPsc && c.rois.size() != 2) {
    invalid(fmt::format("{} needs exactly two ROIs (A, B), got {}", feedback_mode_name(c.mode), c.rois.size()));
  }
  for (size_t i = 0; i < c.rois.size(); ++i) {
    if (c.rois[i] < 0 || c.rois[i] >= c.n_rois) {
      invalid(fmt::format("ROI index {} out of range 0..{}", c.rois[i], c.n_rois - 1));
    }
    for (size_t j = 0; j < i; ++j) {
      if (c.rois[j] == c.rois[i]) invalid(fmt::format("ROI {} listed twice", c.rois[i]));
    }
  }
  if (!finite_nonnegative(c.hrf_delay_s)) invalid(fmt::format("hrf_delay_s must be >= 0 (got {})", c.hrf_delay_s));
  if (c.baseline_blocks < 0) invalid("baseline_blocks must be >= 0");
  if (c.min_baseline_volumes < 1) invalid("min_baseline_volumes must be >= 1");
  if (c.detrend.drift_order < 0 || c.detrend.drift_order > 3) {
    invalid(fmt::format("detrend.drift_order must be 0..3 (got {})", c.detrend.drift_order));
  }
  if (c.detrend.regressor_step < 0) invalid("detrend.regressor_step must be >= 0");
  if (!finite_nonnegative(c.kalman.process_noise) || !finite_nonnegative(c.kalman.measurement_noise) ||
      !finite_nonnegative(c.kalman.spike_threshold)) {
    invalid("kalman noise factors and spike threshold must be finite and >= 0");
  }
  if (c.scaling.window_volumes < 0) invalid("scaling.window_volumes must be >= 0");
  if (c.scaling.robust_after < 1) invalid("scaling.robust_after must be >= 1");
  if (!(c.scaling.robust_fraction > 0.0 && c.scaling.robust_fraction <= 0.5)) {
    invalid("scaling.robust_fraction must be in (0, 0.5]");
  }
  if (!(std::isfinite(c.scaling.min_half_range) && c.scaling.min_half_range > 0.0)) {
    invalid("scaling.min_half_range must be > 0");
  }
  if (c.connectivity_window < 3)
    invalid(fmt::format("connectivity_window must be >= 3 (got {})", c.connectivity_window));
  if (c.connectivity_min_volumes != 0 &&
      (c.connectivity_min_volumes < 3 || c.connectivity_min_volumes > c.connectivity_window)) {
    invalid("connectivity_min_volumes must be 0 or 3..connectivity_window");
  }
  if (!std::isfinite(c.gain)) invalid("gain must be finite");
  if ((c.min_value && std::isnan(*c.min_value)) || (c.max_value && std::isnan(*c.max_value)) ||
      (c.min_value && c.max_value && *c.min_value > *c.max_value)) {
    invalid("min_value must be <= max_value");
  }
}

std::string_view feedback_mode_name(FeedbackMode mode) {
  switch (mode) {
    case FeedbackMode::kRoiPsc:
      return "roi-psc";
    case FeedbackMode::kDifferentialPsc:
      return "differential-psc";
    case FeedbackMode::kConnectivity:
      return "connectivity";
  }
  return "?";
}

std::string_view feedback_protocol_name(FeedbackProtocol protocol) {
  return protocol == FeedbackProtocol::kContinuous ? "continuous" : "intermittent";
}

}  // namespace rtf
