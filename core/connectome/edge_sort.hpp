// Sorting a connectome pass's edges by (i, j) on all host cores: a counting sort by row i (per-thread counts over
// contiguous ranges, offsets per row and thread), then each row's edges by column j. A chunk of a dense pass holds
// ~10^8 edges (density 1% of 10^6 nodes: 7.5 x 10^9 candidates in 96 chunks), which std::sort on the device's one
// thread would take seconds each to order; the result is the same as std::sort's (a pair appears once).
#pragma once

#include <cstddef>
#include <vector>

#include "core/connectome/thresholded_correlation.hpp"

namespace rtf {

// The order sort_edges gives: by row i, then column j.
inline bool edge_before(const Edge& a, const Edge& b) {
  return a.i != b.i ? a.i < b.i : a.j < b.j;
}

// `workers`: host threads (0: host_thread_count()). The order depends on nothing but the edges. `scratch`, given, is
// the second buffer (swapped with `edges`; kept by the caller for the next call, its memory already there).
void sort_edges(std::vector<Edge>& edges, size_t workers = 0, std::vector<Edge>* scratch = nullptr);

}  // namespace rtf
