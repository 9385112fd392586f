// Blocks of mask voxels as the chunks of a spread job (bedpost, glm --bayes): consecutive voxels of the mask, whose
// boundaries change no result (each voxel's random streams are keyed by its index in the whole mask), so they are sized
// from the devices.
#pragma once

#include <cstdint>

namespace rtf {

struct VoxelBlocks {
  int64_t voxels = 0;     // in the mask
  int64_t per_block = 1;  // voxels per block (the last one may hold fewer)
  int64_t count() const { return (voxels + per_block - 1) / per_block; }
  int64_t begin(int64_t block) const { return block * per_block; }
  int64_t end(int64_t block) const { return begin(block) + per_block < voxels ? begin(block) + per_block : voxels; }
  int64_t size(int64_t block) const { return end(block) - begin(block); }
};

// `requested` voxels a block when given (> 0), else `per_device` blocks for each of `devices` devices, each of at least
// `minimum` voxels.
VoxelBlocks voxel_blocks(int64_t voxels, int64_t requested, int64_t devices, int64_t per_device, int64_t minimum);

}  // namespace rtf
