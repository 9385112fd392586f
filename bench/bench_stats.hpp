// Benchmark helpers: order statistics of repeated timings and the JSON line every driver prints.
#pragma once

#include <algorithm>
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

inline void print_line(const nlohmann::json& line) {
  std::printf("%s\n", line.dump().c_str());
  std::fflush(stdout);
}

}  // namespace rtf::bench
