// The tied time pairs of each node's series, for Kendall's tau-b (core/connectome/kendall.cpp, kernels/kendall.cl):
// their number gives the tie-corrected denominators; where a series has few of them (a float series: a handful at
// most), they are listed, so that the device can count every other pair with one popcount per word and add their
// share as a correction; a tile of nodes with a series with many (integer data) is counted with two.
#pragma once

#include <cstdint>
#include <vector>

#include "core/connectome/node_series.hpp"

namespace rtf {

struct KendallTies {
  std::vector<double> tied;           // [N]: tied time pairs of each series (n1 of tau-b)
  std::vector<uint8_t> dense_tile;    // [tiles]: 1 if a node of the tile has more than the sparse limit
  std::vector<int32_t> sparse_nodes;  // nodes with 1 .. limit tied pairs
  std::vector<int32_t> offsets;       // [sparse nodes + 1]: their pairs in s, t
  std::vector<uint16_t> s, t;         // tied time pairs (s < t, x[s] == x[t]) of the sparse nodes
};

// `tile`: nodes per tile of the device's accumulation; `sparse_limit`: the most tied pairs a node may have to be
// listed (a constant series has L(L-1)/2: always dense).
KendallTies kendall_ties(const NodeSeries& series, int tile, int64_t sparse_limit);

}  // namespace rtf
