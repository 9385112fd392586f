// Dynamic scaling limits: min/max over a short window, medians of the extreme 5% over a longer one.
#include "core/feedback/dynamic_scaling.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/feedback/feedback_stats.hpp"

namespace rtf {

void ScalingLimits::include(double x) {
  lower = std::min(lower, x);
  upper = std::max(upper, x);
}

ScalingLimits dynamic_scaling_limits(std::span<const double> window, double min_half_range,
                                     const ScalingOptions& options) {
  if (!(std::isfinite(min_half_range) && min_half_range > 0.0)) {
    throw std::invalid_argument("dynamic scaling: the minimum half range must be > 0");
  }
  ScalingLimits limits{-min_half_range, min_half_range};
  if (window.empty()) return limits;
  const auto n = static_cast<int64_t>(window.size());
  double lower = 0.0, upper = 0.0;
  if (n < options.robust_after) {
    const auto [lo, hi] = std::minmax_element(window.begin(), window.end());
    lower = *lo;
    upper = *hi;
  } else {
    std::vector<double> sorted(window.begin(), window.end());
    std::sort(sorted.begin(), sorted.end());
    const auto m = std::max<int64_t>(1, std::llround(options.robust_fraction * static_cast<double>(n)));
    lower = median(std::vector<double>(sorted.begin(), sorted.begin() + m));
    upper = median(std::vector<double>(sorted.end() - m, sorted.end()));
  }
  limits.include(lower);
  limits.include(upper);
  return limits;
}

}  // namespace rtf
