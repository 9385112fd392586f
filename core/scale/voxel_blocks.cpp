// voxel_blocks: the requested size, or the voxels shared evenly by the devices' blocks, rounded up, and no smaller
// than the minimum.
#include "core/scale/voxel_blocks.hpp"

#include <algorithm>
#include <stdexcept>

namespace rtf {

VoxelBlocks voxel_blocks(int64_t voxels, int64_t requested, int64_t devices, int64_t per_device, int64_t minimum) {
  if (voxels < 0 || requested < 0 || devices < 1 || per_device < 1 || minimum < 1) {
    throw std::invalid_argument("voxel_blocks: negative voxels or size, or no device");
  }
  const int64_t blocks = per_device * devices;
  return {voxels, requested > 0 ? requested : std::max(minimum, (voxels + blocks - 1) / blocks)};
}

}  // namespace rtf
