// Benchmark helpers: order statistics of repeated timings, the JSON line every driver prints, binomial intervals.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/util/quantiles.hpp"

namespace rtf::bench {

struct Timing {
  double median = 0.0;
  double p95 = 0.0;
  double min = 0.0;
  int runs = 0;
};

inline Timing summarize(std::vector<double> samples) {
  const Quantiles q = quantiles(std::move(samples));
  return {q.median, q.p95, q.min, static_cast<int>(q.count)};
}

// A latency distribution in ms as the latency benchmarks print it: n, p50, p95, p99, max.
inline nlohmann::json latency_json(std::vector<double> ms) {
  const Quantiles q = quantiles(std::move(ms));
  return {{"n", q.count}, {"p50_ms", q.median}, {"p95_ms", q.p95}, {"p99_ms", q.p99}, {"max_ms", q.max}};
}

inline void print_line(const nlohmann::json& line) {
  std::printf("%s\n", line.dump().c_str());
  std::fflush(stdout);
}

// 95% Wilson score interval of a binomial proportion k / n (the FWE experiments).
inline std::array<double, 2> wilson(int64_t k, int64_t n) {
  if (n == 0) return {0.0, 1.0};
  const double z = 1.959963984540054, p = static_cast<double>(k) / static_cast<double>(n);
  const double nn = static_cast<double>(n), z2 = z * z;
  const double centre = (p + z2 / (2.0 * nn)) / (1.0 + z2 / nn);
  const double half = z / (1.0 + z2 / nn) * std::sqrt(p * (1.0 - p) / nn + z2 / (4.0 * nn * nn));
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

}  // namespace rtf::bench
