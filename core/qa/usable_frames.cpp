// The two censoring rules and the tally (usable_frames.hpp).
#include "core/qa/usable_frames.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace rtf {

CensorRule parse_censor_rule(const std::string& name) {
  if (name == "firmm") return CensorRule::kFirmm;
  if (name == "power2014") return CensorRule::kPower2014;
  throw std::invalid_argument(fmt::format("censor rule '{}': firmm or power2014", name));
}

std::vector<bool> kept_frames(const std::vector<double>& fd, double threshold, CensorRule rule) {
  const size_t n = fd.size();
  std::vector<bool> keep(n, true);
  if (rule == CensorRule::kFirmm) {
    for (size_t t = 0; t < n; ++t) keep[t] = std::isfinite(fd[t]) && fd[t] < threshold;
    return keep;
  }
  for (size_t t = 0; t < n; ++t) {
    if (std::isfinite(fd[t]) && fd[t] <= threshold) continue;
    // Censored with the frame before and the two after.
    for (size_t u = t > 0 ? t - 1 : 0; u <= std::min(n - 1, t + 2); ++u) keep[u] = false;
  }
  for (size_t t = 0; t < n;) {  // kept runs shorter than 5 frames
    if (!keep[t]) {
      ++t;
      continue;
    }
    size_t end = t;
    while (end < n && keep[end]) ++end;
    if (end - t < 5)
      std::fill(keep.begin() + static_cast<std::ptrdiff_t>(t), keep.begin() + static_cast<std::ptrdiff_t>(end), false);
    t = end;
  }
  return keep;
}

std::vector<UsableTally> usable_tally(const std::vector<double>& fd, double tr_s, const std::vector<double>& thresholds,
                                      double target_minutes, CensorRule rule) {
  if (!(tr_s > 0) || !(target_minutes > 0)) {
    throw std::invalid_argument(
        fmt::format("usable frames: TR {} s and target {} min must be > 0", tr_s, target_minutes));
  }
  std::vector<UsableTally> out;
  const double elapsed = static_cast<double>(fd.size()) * tr_s / 60.0;
  for (const double threshold : thresholds) {
    const std::vector<bool> keep = kept_frames(fd, threshold, rule);
    UsableTally tally;
    tally.threshold_mm = threshold;
    tally.frames = static_cast<int>(std::count(keep.begin(), keep.end(), true));
    tally.minutes = tally.frames * tr_s / 60.0;
    if (tally.minutes >= target_minutes) {
      tally.minutes_to_target = 0.0;
    } else if (tally.frames == 0) {
      tally.minutes_to_target = std::numeric_limits<double>::infinity();
    } else {
      tally.minutes_to_target = (target_minutes - tally.minutes) * elapsed / tally.minutes;
    }
    out.push_back(tally);
  }
  return out;
}

}  // namespace rtf
