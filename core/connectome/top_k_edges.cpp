// Histogram select of the k-th largest edge value, then a parallel filter.
#include "core/connectome/top_k_edges.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <numeric>
#include <stdexcept>

#include "core/util/host_threads.hpp"

namespace rtf {

namespace {

float value_of(const Edge& e, bool absolute) {
  return absolute ? std::abs(e.r) : e.r;
}

// A float's bits as an unsigned key in the floats' order (negative values flipped).
uint32_t order_key(float x) {
  const auto bits = std::bit_cast<uint32_t>(x);
  return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}

}  // namespace

TopEdges top_k_edges(const std::vector<Edge>& candidates, int64_t k, bool absolute, size_t workers) {
  const size_t n = candidates.size();
  if (k < 1 || static_cast<size_t>(k) > n) throw std::invalid_argument("top_k_edges: k outside 1 .. candidates");
  workers = workers > 0 ? workers : host_thread_count();
  constexpr size_t kBins = 65536;
  // 1. Histogram of the keys' top 16 bits, per thread, summed.
  std::vector<std::vector<int64_t>> histograms(workers);
  host_ranges(n, workers, [&](size_t begin, size_t end, size_t w) {
    std::vector<int64_t>& h = histograms[w];
    h.assign(kBins, 0);
    for (size_t e = begin; e < end; ++e) ++h[order_key(value_of(candidates[e], absolute)) >> 16];
  });
  std::vector<int64_t> histogram(kBins, 0);
  for (const auto& h : histograms) {
    for (size_t b = 0; b < h.size(); ++b) histogram[b] += h[b];
  }
  // 2. The bin holding the k-th largest, counting down from the top.
  size_t bin = kBins;
  int64_t above = 0;
  while (bin > 0 && above + histogram[bin - 1] < k) above += histogram[--bin];
  --bin;
  const auto need = static_cast<size_t>(k - above);  // the need-th largest within the bin
  // 3. That bin's values, exactly.
  std::vector<std::vector<float>> in_bin(workers);
  host_ranges(n, workers, [&](size_t begin, size_t end, size_t w) {
    for (size_t e = begin; e < end; ++e) {
      const float v = value_of(candidates[e], absolute);
      if ((order_key(v) >> 16) == bin) in_bin[w].push_back(v);
    }
  });
  std::vector<float> values;
  for (const auto& v : in_bin) values.insert(values.end(), v.begin(), v.end());
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(need - 1), values.end(),
                   std::greater<>());
  TopEdges out;
  out.threshold = values[need - 1];
  // 4. Every candidate at or above it, each thread's range at its offset.
  std::vector<size_t> counts(workers, 0);
  host_ranges(n, workers, [&](size_t begin, size_t end, size_t w) {
    for (size_t e = begin; e < end; ++e) counts[w] += value_of(candidates[e], absolute) >= out.threshold ? 1 : 0;
  });
  std::vector<size_t> offsets(workers + 1, 0);
  std::partial_sum(counts.begin(), counts.end(), offsets.begin() + 1);
  out.edges.resize(offsets.back());
  host_ranges(n, workers, [&](size_t begin, size_t end, size_t w) {
    size_t at = offsets[w];
    for (size_t e = begin; e < end; ++e) {
      if (value_of(candidates[e], absolute) >= out.threshold) out.edges[at++] = candidates[e];
    }
  });
  return out;
}

}  // namespace rtf
