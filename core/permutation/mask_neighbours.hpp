// The masked voxels of a grid and their neighbours, as the cluster and TFCE kernels read them: each masked voxel gets
// its mask index (ascending full-grid index, x fastest), and a table gives, per voxel and neighbour offset, the mask
// index of that neighbour (-1 outside the grid or the mask). Shared by clusters.cpp and tfce.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace rtf {

// kPreceding: only the offsets that precede a voxel in the grid (each adjacent pair once, from its later voxel);
// kAll: every offset of the neighbourhood.
enum class NeighbourSet { kPreceding, kAll };
// kNeighbourMajor: table[k][V]; kVoxelMajor: table[V][K].
enum class NeighbourLayout { kNeighbourMajor, kVoxelMajor };

struct MaskNeighbours {
  size_t voxels = 0;           // V, the voxels in the mask
  size_t offsets = 0;          // K, neighbours per voxel
  std::vector<int32_t> table;  // K x V, in the layout asked for
  NeighbourSet set = NeighbourSet::kAll;
  NeighbourLayout layout = NeighbourLayout::kVoxelMajor;
};

// `connectivity` 6 (faces), 18 (and edges) or 26 (and corners). Throws std::invalid_argument, its message starting
// with `what`, for another connectivity, a grid that is empty or too large for int32 indices, a mask of the wrong size,
// or an empty mask.
MaskNeighbours mask_neighbours(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity,
                               NeighbourSet set, NeighbourLayout layout, const std::string& what);

}  // namespace rtf
