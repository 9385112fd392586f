// bedpost's blocks of mask voxels (core/diffusion/bedpost.hpp): their size from the devices, one block's starting
// states and chains on one device, its result as chunk bytes, and every block's result joined into one run of all the
// voxels on rank 0.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "core/device/device.hpp"
#include "core/diffusion/ball_stick_mcmc.hpp"
#include "core/diffusion/diffusion_data.hpp"
#include "core/scale/chunk_bytes.hpp"
#include "core/scale/voxel_blocks.hpp"

namespace rtf {

// A GPU runs a block's chains at its best speed from a few ten thousand voxels (kernels/ball_stick.cl: 4 work-items
// per voxel, ~20% more time per voxel at 18,750 voxels than at 150,000 on an H200): a device whose whole share is below
// 2 x 65,536 voxels gets it as one block; larger shares are cut into up to 4 blocks per device of at least 65,536, the
// same number for every device (alike devices then end together); no block below 1024 voxels. `requested` > 0: that.
VoxelBlocks bedpost_blocks(int64_t voxels, int64_t requested, int64_t devices);

// What one block's computation reads, and where its time goes (summed over this process's blocks).
struct BedpostBlockWork {
  const DiffusionScheme& scheme;
  const std::vector<float>& data;  // the mask voxels' signals, voxel-major
  const BallStickOptions& options;
  bool host_start = false;
  std::mutex times_mutex;
  double init_seconds = 0.0, mcmc_seconds = 0.0;
};

// Voxels [begin, end) on `device`: starting states, then the chains; `progress` gets the voxel-iterations of the
// chains done since its last call, and its caller's throw_if_chunk_cancelled (a backup copy elsewhere finished the
// block) stops the block. A CPU device runs the block in parts of 1024 voxels, so that a backup copy on a GPU that
// finishes first stops it within one part's launch (the chains do not depend on the parts). Returns the packed result
// (pack_bedpost_block).
using BedpostProgress = std::function<void(int64_t more)>;
ChunkBytes run_bedpost_block(Device& device, BedpostBlockWork& work, int64_t begin, int64_t end,
                             const BedpostProgress& progress);

// A block's result: its voxels' draws, means and acceptance counts, and how many of them had no usable fit.
ChunkBytes pack_bedpost_block(const BallStickRun& run, int64_t unfitted);

// Every block's result placed in one run of all the voxels (blocks in voxel order); adds the blocks' unfitted counts to
// `unfitted`. Throws std::runtime_error for a block that does not hold its voxels.
BallStickRun join_bedpost_blocks(const std::vector<ChunkBytes>& results, const VoxelBlocks& blocks, int64_t& unfitted);

}  // namespace rtf
