// Benchmark helpers: order statistics of repeated timings and the JSON line every driver prints.
#pragma once

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

namespace rtf::bench {

struct Timing {
  double median = 0.0;
  double p95 = 0.0;
  double min = 0.0;
  int runs = 0;
};

inline Timing summarize(std::vector<double> samples) {
  Timing t;
  if (samples.empty()) return t;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  t.runs = static_cast<int>(n);
  t.min = samples.front();
  t.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  t.p95 = samples[std::min(n - 1, static_cast<size_t>(0.95 * static_cast<double>(n - 1) + 0.5))];
  return t;
}

inline void print_line(const nlohmann::json& line) {
  std::printf("%s\n", line.dump().c_str());
  std::fflush(stdout);
}

}  // namespace rtf::bench
