// The k largest of a connectome's candidate edges by r (or |r|), exactly, in linear passes spread over the host's
// threads (core/connectome/density_threshold.cpp): a 65,536-bin histogram of the values' order-preserving bit
// patterns finds the bin of the k-th largest, which alone is searched exactly (nth_element), then one filtering pass
// keeps every edge at or above that value (ties included), in the candidates' order. The candidates may come in
// pieces (one per chunk of a pass: a dense pass's 10^10 candidates are never copied into one list), each copied in
// on all threads so that its memory is first written (faulted in) in parallel.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/connectome/thresholded_correlation.hpp"
#include "core/util/host_array.hpp"

namespace rtf {

// Candidates in order, in pieces.
struct EdgePieces {
  std::vector<HostArray<Edge>> pieces;
  int64_t size() const;
  bool empty() const { return size() == 0; }
  void clear() { pieces.clear(); }
  // A copy of `edges` as the next piece (large ones copied on `workers` threads, 0: the host's).
  void append(std::span<const Edge> edges, size_t workers = 0);
};

struct TopEdges {
  HostArray<Edge> edges;   // every candidate whose value is >= threshold, in the candidates' order
  float threshold = 0.0f;  // the k-th largest value
};

// 1 <= k <= the candidates' count; values are finite. `workers` 0: the host's threads.
TopEdges top_k_edges(const std::vector<Edge>& candidates, int64_t k, bool absolute, size_t workers = 0);
TopEdges top_k_edges(const EdgePieces& candidates, int64_t k, bool absolute, size_t workers = 0);

}  // namespace rtf
