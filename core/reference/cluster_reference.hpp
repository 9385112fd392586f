// Double-precision reference of the cluster statistics (core/permutation/clusters.hpp), written for clarity: a
// breadth-first flood fill over the full grid from each unvisited supra-threshold masked voxel, through the 6, 18 or 26
// neighbours inside the mask; a cluster's mass sums (double) t - threshold over its voxels.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/permutation/clusters.hpp"

namespace rtf::reference {

// `maps`: count x V (V = voxels of `mask`, in ascending full-grid index). Same outputs as ClusterStatistics::maxima.
ClusterMaxima cluster_maxima(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity,
                             const std::vector<float>& maps, int count, float threshold);

// `map`: one map of the V masked voxels. Same outputs as ClusterStatistics::observed.
ObservedClusters observed_clusters(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity,
                                   const std::vector<float>& map, float threshold);

}  // namespace rtf::reference
