// Median, Pearson correlation, Fisher's z and running moments for the neurofeedback value.
#include "core/feedback/feedback_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rtf {

double median(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lower + upper);
}

double pearson(std::span<const double> a, std::span<const double> b) {
  const size_t n = a.size();
  if (n < 2 || b.size() != n) return std::numeric_limits<double>::quiet_NaN();
  double ma = 0.0, mb = 0.0;
  for (size_t i = 0; i < n; ++i) {
    ma += a[i];
    mb += b[i];
  }
  ma /= static_cast<double>(n);
  mb /= static_cast<double>(n);
  double saa = 0.0, sbb = 0.0, sab = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double da = a[i] - ma, db = b[i] - mb;
    saa += da * da;
    sbb += db * db;
    sab += da * db;
  }
  if (!(saa > 0.0) || !(sbb > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  return std::clamp(sab / std::sqrt(saa * sbb), -1.0, 1.0);
}

double fisher_z(double r) {
  constexpr double kLimit = 1.0 - 1e-12;
  return std::atanh(std::clamp(r, -kLimit, kLimit));
}

void RunningMoments::add(double x) {
  ++n_;
  const double delta = x - mean_;
  mean_ += delta / static_cast<double>(n_);
  m2_ += delta * (x - mean_);
}

double RunningMoments::stddev() const {
  if (n_ < 2) return 0.0;
  return std::sqrt(std::max(0.0, m2_) / static_cast<double>(n_ - 1));
}

}  // namespace rtf
