// The k largest of a connectome's candidate edges by r (or |r|), exactly, in linear passes spread over the host's
// threads (core/connectome/density_threshold.cpp): a 65,536-bin histogram of the values' order-preserving bit
// patterns finds the bin of the k-th largest, which alone is searched exactly (nth_element), then one filtering pass
// keeps every edge at or above that value (ties included), in the candidates' order.
#pragma once

#include <cstdint>
#include <vector>

#include "core/connectome/thresholded_correlation.hpp"

namespace rtf {

struct TopEdges {
  std::vector<Edge> edges;  // every candidate whose value is >= threshold, in the candidates' order
  float threshold = 0.0f;   // the k-th largest value
};

// 1 <= k <= candidates.size(); values are finite. `workers` 0: the host's threads.
TopEdges top_k_edges(const std::vector<Edge>& candidates, int64_t k, bool absolute, size_t workers = 0);

}  // namespace rtf
