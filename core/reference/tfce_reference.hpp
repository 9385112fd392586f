// Double-precision reference of TFCE (core/permutation/tfce.hpp), written for clarity: for each threshold
// h_k = float(k) * dh, k = 1, 2, ... while h_k <= the map's maximum, a breadth-first flood fill over the full grid
// labels the clusters (6, 18 or 26 neighbours inside the mask) of the masked voxels with t >= h_k, and every voxel of
// a cluster of extent e adds e^E * h_k^H * dh (double) to its TFCE.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace rtf::reference {

// `map`: one map of the V masked voxels (ascending full-grid index). The TFCE per masked voxel. Throws
// std::invalid_argument for a connectivity other than 6, 18 or 26, sizes that disagree or dh not finite and > 0.
std::vector<double> tfce(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity,
                         const std::vector<float>& map, float dh, double E, double H);

// `maps`: count x V. Per map, the largest TFCE (0 for none).
std::vector<double> tfce_maxima(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity,
                                const std::vector<float>& maps, int count, float dh, double E, double H);

}  // namespace rtf::reference
