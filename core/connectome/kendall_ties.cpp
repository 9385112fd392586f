// Tied time pairs per node: sort the values (threads over nodes), runs of equal values are the tie groups; the few
// nodes with a short list have their tied pairs found again with their time points.
#include "core/connectome/kendall_ties.hpp"

#include <algorithm>
#include <numeric>

#include "core/util/host_threads.hpp"

namespace rtf {

KendallTies kendall_ties(const NodeSeries& series, int tile, int64_t sparse_limit) {
  const auto n = series.nodes(), l = static_cast<size_t>(series.length), lp = static_cast<size_t>(series.padded);
  KendallTies out;
  out.tied.assign(n, 0.0);
  host_ranges(n, host_thread_count(), [&](size_t begin, size_t end, size_t) {
    for (size_t node = begin; node < end; ++node) {
      std::vector<float> x(series.z.begin() + static_cast<std::ptrdiff_t>(node * lp),
                           series.z.begin() + static_cast<std::ptrdiff_t>(node * lp + l));
      std::sort(x.begin(), x.end());
      double tied = 0;
      for (size_t a = 0; a < l;) {
        size_t b = a + 1;
        while (b < l && x[b] == x[a]) ++b;
        const auto size = static_cast<double>(b - a);
        tied += size * (size - 1) / 2;
        a = b;
      }
      out.tied[node] = tied;
    }
  });
  out.dense_tile.assign((n + static_cast<size_t>(tile) - 1) / static_cast<size_t>(tile), 0);
  out.offsets.push_back(0);
  std::vector<uint16_t> order(l);
  for (size_t node = 0; node < n; ++node) {
    if (out.tied[node] > static_cast<double>(sparse_limit)) {
      out.dense_tile[node / static_cast<size_t>(tile)] = 1;
      continue;
    }
    if (out.tied[node] == 0) continue;
    const float* x = series.z.data() + node * lp;
    std::iota(order.begin(), order.end(), uint16_t{0});
    std::stable_sort(order.begin(), order.end(), [x](uint16_t a, uint16_t b) { return x[a] < x[b]; });
    for (size_t a = 0; a < l;) {
      size_t b = a + 1;
      while (b < l && x[order[b]] == x[order[a]]) ++b;
      for (size_t u = a; u < b; ++u) {
        for (size_t v = u + 1; v < b; ++v) {  // stable: order[u] < order[v]
          out.s.push_back(order[u]);
          out.t.push_back(order[v]);
        }
      }
      a = b;
    }
    out.sparse_nodes.push_back(static_cast<int32_t>(node));
    out.offsets.push_back(static_cast<int32_t>(out.s.size()));
  }
  return out;
}

}  // namespace rtf
