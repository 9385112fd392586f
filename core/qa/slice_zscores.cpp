// SliceZScores: each slice's finite history values kept sorted; medians read off them, MADs merged from the middle.
#include "core/qa/slice_zscores.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace rtf {

namespace {

// The median of the finite values of `values` (reordered); NaN when there is none.
double finite_median(std::vector<double>& values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double x) { return !std::isfinite(x); }), values.end());
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// The median of ascending `sorted` (not empty) and the median of |x - median| over it: the deviations of the values
// at or below the median (read downwards) and of those above it (read upwards) are two ascending runs, and the middle
// deviations are the k-th smallest of the two, found by binary search on how many come from the lower run.
std::pair<double, double> median_and_mad(const std::vector<double>& sorted) {
  const size_t n = sorted.size();
  const double med = n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  const auto a = static_cast<size_t>(std::upper_bound(sorted.begin(), sorted.end(), med) - sorted.begin());
  const size_t b = n - a;
  const auto lower = [&](size_t t) { return std::abs(sorted[a - 1 - t] - med); };  // ascending in t < a
  const auto upper = [&](size_t t) { return std::abs(sorted[a + t] - med); };      // ascending in t < b
  // The r-th smallest (0-based) deviation: i from the lower run and r + 1 - i from the upper.
  const auto kth = [&](size_t r) {
    size_t lo = r + 1 > b ? r + 1 - b : 0, hi = std::min(a, r + 1);
    while (true) {
      const size_t i = lo + (hi - lo) / 2, j = r + 1 - i;
      if (i < hi && j > 0 && upper(j - 1) > lower(i)) {
        lo = i + 1;  // more from the lower run
      } else if (i > lo && j < b && lower(i - 1) > upper(j)) {
        hi = i - 1;  // fewer
      } else {
        const double from_lower = i > 0 ? lower(i - 1) : -std::numeric_limits<double>::infinity();
        const double from_upper = j > 0 ? upper(j - 1) : -std::numeric_limits<double>::infinity();
        return std::max(from_lower, from_upper);
      }
    }
  };
  const double mad = n % 2 == 1 ? kth(n / 2) : 0.5 * (kth(n / 2 - 1) + kth(n / 2));
  return {med, mad};
}

}  // namespace

SliceZScores::SliceZScores(const SliceZScoreOptions& options) : options_(options) {
  if (options.history < 2 || options.min_history < 2 || options.min_history > options.history ||
      !(options.threshold > 0) || !std::isfinite(options.threshold)) {
    throw std::invalid_argument(fmt::format(
        "slice z-scores: history {} (at least 2), min_history {} (2 to history), threshold {} (a number > 0)",
        options.history, options.min_history, options.threshold));
  }
}

void SliceZScores::rebuild(size_t slices) {
  sorted_.assign(slices, {});
  for (size_t z = 0; z < slices; ++z) {
    for (const auto& volume : history_) {
      if (z < volume.size() && std::isfinite(volume[z])) sorted_[z].push_back(volume[z]);
    }
    std::sort(sorted_[z].begin(), sorted_[z].end());
  }
}

SliceZ SliceZScores::next(const std::vector<double>& slice_means) {
  SliceZ out;
  const size_t slices = slice_means.size();
  if (sorted_.size() != slices) rebuild(slices);
  out.z.assign(slices, std::numeric_limits<double>::quiet_NaN());
  // Each slice's history: its median and its spread (1.4826 MAD, the SD of normal data); slices without enough history
  // are left out.
  std::vector<double> medians(slices, std::numeric_limits<double>::quiet_NaN()), spreads = medians, relative;
  for (size_t z = 0; z < slices; ++z) {
    if (static_cast<int>(sorted_[z].size()) < options_.min_history) continue;
    const auto [med, mad] = median_and_mad(sorted_[z]);
    medians[z] = med;
    spreads[z] = 1.4826 * mad;
    if (medians[z] != 0) relative.push_back(spreads[z] / std::abs(medians[z]));
  }
  // A MAD from a few values can be far below the slice's real noise: no slice's spread is taken below half the median
  // relative spread of all slices (the slices share the scanner's noise level).
  const double floor_relative = 0.5 * finite_median(relative);
  for (size_t z = 0; z < slices; ++z) {
    const double m = slice_means[z];
    if (!std::isfinite(m) || !std::isfinite(medians[z])) continue;
    const double spread =
        std::isfinite(floor_relative) ? std::max(spreads[z], floor_relative * std::abs(medians[z])) : spreads[z];
    const double d = m - medians[z];
    out.z[z] = spread > 0 ? d / spread : (d == 0 ? 0.0 : std::copysign(std::numeric_limits<double>::infinity(), d));
    if (out.worst_slice < 0 || std::abs(out.z[z]) > std::abs(out.worst_z)) {
      out.worst_slice = static_cast<int>(z);
      out.worst_z = out.z[z];
    }
    if (std::abs(out.z[z]) > options_.threshold) out.flagged.push_back(static_cast<int>(z));
  }
  // The volume joins the histories; the oldest leaves them once there are more than `history`.
  history_.push_back(slice_means);
  for (size_t z = 0; z < slices; ++z) {
    if (std::isfinite(slice_means[z])) {
      std::vector<double>& h = sorted_[z];
      h.insert(std::upper_bound(h.begin(), h.end(), slice_means[z]), slice_means[z]);
    }
  }
  if (static_cast<int>(history_.size()) > options_.history) {
    const std::vector<double>& oldest = history_.front();
    for (size_t z = 0; z < slices && z < oldest.size(); ++z) {
      if (!std::isfinite(oldest[z])) continue;
      std::vector<double>& h = sorted_[z];
      h.erase(std::lower_bound(h.begin(), h.end(), oldest[z]));  // (an equal value: any of them will do)
    }
    history_.pop_front();
  }
  return out;
}

}  // namespace rtf
