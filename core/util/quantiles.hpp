// Order statistics of a sample (latencies, benchmark timings): min, median, p95, p99, max by the nearest-rank
// rule on the sorted sample (the median averages the two middle values of an even sample).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace rtf {

struct Quantiles {
  size_t count = 0;
  double min = 0.0;
  double median = 0.0;
  double p95 = 0.0;
  double p99 = 0.0;
  double max = 0.0;
};

inline Quantiles quantiles(std::vector<double> samples) {
  Quantiles q;
  if (samples.empty()) return q;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  auto rank = [&](double p) {
    return samples[std::min(n - 1, static_cast<size_t>(p * static_cast<double>(n - 1) + 0.5))];
  };
  q.count = n;
  q.min = samples.front();
  q.max = samples.back();
  q.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  q.p95 = rank(0.95);
  q.p99 = rank(0.99);
  return q;
}

}  // namespace rtf
