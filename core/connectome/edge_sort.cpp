// Counting sort by row (core/util/bucket_slots.hpp), then rows by column, both spread over host threads.
#include "core/connectome/edge_sort.hpp"

#include <algorithm>
#include <cstdint>

#include "core/util/bucket_slots.hpp"
#include "core/util/host_threads.hpp"

namespace rtf {

namespace {

constexpr size_t kEdgesPerWorker = size_t{1} << 16;  // below this a thread is not worth starting

}  // namespace

void sort_edges(std::vector<Edge>& edges, size_t workers, std::vector<Edge>* scratch) {
  const size_t n = edges.size();
  workers =
      std::clamp<size_t>(workers > 0 ? workers : host_thread_count(), 1, std::max<size_t>(1, n / kEdgesPerWorker));
  if (n < 2) return;
  const auto [lo, hi] =
      std::minmax_element(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.i < b.i; });
  const int64_t first = lo->i;
  const auto rows = static_cast<size_t>(static_cast<int64_t>(hi->i) - first + 1);
  // Rows far outnumbering the edges (a sparse list): the counts would cost more than they save.
  if (rows * workers > 4 * n + 4096) {
    std::sort(edges.begin(), edges.end(), edge_before);
    return;
  }
  // Each thread's slots per row over its range of the list, then the scatter over the same ranges.
  BucketSlots slots = bucket_slots(n, rows, workers, [&](size_t k, auto&& land) {
    land(static_cast<size_t>(edges[k].i - first));
    return true;
  });
  std::vector<Edge> own;
  std::vector<Edge>& sorted = scratch != nullptr ? *scratch : own;
  sorted.resize(n);
  host_ranges(n, workers, [&](size_t begin, size_t end, size_t w) {
    std::vector<int64_t>& next = slots.next[w];
    for (size_t e = begin; e < end; ++e) {
      sorted[static_cast<size_t>(next[static_cast<size_t>(edges[e].i - first)]++)] = edges[e];
    }
  });
  slots.next = {};
  const std::vector<int64_t>& row_start = slots.start;
  // Each row by column.
  host_ranges(rows, workers, [&](size_t begin, size_t end, size_t) {
    for (size_t r = begin; r < end; ++r) {
      std::sort(sorted.begin() + row_start[r], sorted.begin() + row_start[r + 1],
                [](const Edge& a, const Edge& b) { return a.j < b.j; });
    }
  });
  edges.swap(sorted);
}

}  // namespace rtf
