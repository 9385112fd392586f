// SliceZScores: medians by sorting a copy of at most `history` values per slice.
#include "core/qa/slice_zscores.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

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

}  // namespace

SliceZScores::SliceZScores(const SliceZScoreOptions& options) : options_(options) {
  if (options.history < 2 || options.min_history < 2 || options.min_history > options.history ||
      !(options.threshold > 0) || !std::isfinite(options.threshold)) {
    throw std::invalid_argument(fmt::format(
        "slice z-scores: history {} (at least 2), min_history {} (2 to history), threshold {} (a number > 0)",
        options.history, options.min_history, options.threshold));
  }
}

SliceZ SliceZScores::next(const std::vector<double>& slice_means) {
  SliceZ out;
  const size_t slices = slice_means.size();
  out.z.assign(slices, std::numeric_limits<double>::quiet_NaN());
  // Each slice's history: its median and its spread (1.4826 MAD, the SD of normal data); slices without enough history
  // are left out.
  std::vector<double> medians(slices, std::numeric_limits<double>::quiet_NaN()), spreads = medians, relative;
  std::vector<double> column, deviations;
  for (size_t z = 0; z < slices; ++z) {
    column.clear();
    for (const auto& volume : history_) {
      if (z < volume.size() && std::isfinite(volume[z])) column.push_back(volume[z]);
    }
    if (static_cast<int>(column.size()) < options_.min_history) continue;
    medians[z] = finite_median(column);
    deviations.clear();
    for (const double x : column) deviations.push_back(std::abs(x - medians[z]));
    spreads[z] = 1.4826 * finite_median(deviations);
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
  history_.push_back(slice_means);
  if (static_cast<int>(history_.size()) > options_.history) history_.pop_front();
  return out;
}

}  // namespace rtf
