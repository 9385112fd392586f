// Dynamic scaling of a neurofeedback time course (OpenNFT, after Koush et al. 2012 and Scharnowski et al. 2012):
// the processed signal is mapped to [0, 1] between a lower and an upper limit taken from a lagging window of recent
// values: min and max while the window is short, then robust limits (medians of the largest and of the smallest 5%),
// at least -+ a small fraction of the signal level, and always widened to contain the values being scaled, so the
// result never leaves [0, 1]. docs/algorithms/feedback.md.
#pragma once

#include <span>

#include "core/feedback/feedback_config.hpp"

namespace rtf {

struct ScalingLimits {
  double lower = 0.0;
  double upper = 0.0;
  double range() const { return upper - lower; }
  // (x - lower) / (upper - lower); in [0, 1] for lower <= x <= upper.
  double scale(double x) const { return (x - lower) / (upper - lower); }
  // Widens the limits to contain x.
  void include(double x);
};

// Limits from the window's values (any order, finite; may be empty): with fewer than options.robust_after values
// their min and max; otherwise, m = max(1, round(robust_fraction n)), the median of the m largest values and the median
// of the m smallest. Then lower <= -min_half_range and upper >= +min_half_range (min_half_range > 0, so the range is
// never 0). Throws std::invalid_argument for min_half_range <= 0.
ScalingLimits dynamic_scaling_limits(std::span<const double> window, double min_half_range,
                                     const ScalingOptions& options);

}  // namespace rtf
