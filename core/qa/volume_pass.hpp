// DeviceQaVolumePass: the live QA stage's per-voxel measures of the newest volume in one launch over the ring's slot
// and one read (kernels/qa_volume_pass.cl): the running moments, cumulative and over the sliding window (the state of
// two DeviceVoxelMoments), the slice means and the global signal inside the mask, DVARS against an earlier slot, and
// the carpet plot's column. The same values as DeviceVoxelMoments, DeviceSliceMeans, DeviceDvars and DeviceCarpetColumn
// launched one after another (which `rtfmri qa` uses), in a sixth of the commands. docs/algorithms/qa.md, "Live".
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/device/pinned_host.hpp"
#include "core/device/result_arena.hpp"

namespace rtf {

class DeviceVoxelMoments;

struct QaVolumeMeasures {
  std::vector<double> slice_means;  // NaN where a slice has no masked, finite voxel
  double global = 0.0;              // the masked, finite voxels' mean (NaN for none)
  double dvars = 0.0;               // RMS of the masked, finite differences (NaN without an earlier slot or with none)
  std::vector<float> carpet;        // the carpet voxels' values, in row order
};

class DeviceQaVolumePass {
 public:
  // `dims`: the grid; `mask`: one byte per voxel (non-zero: inside); `carpet_voxels`: the carpet's voxels in row order
  // (indices into the grid). Throws std::invalid_argument for sizes that do not match or an index outside the grid.
  // `arena`: where the results go (its owner reads them; null: enqueue() reads them itself). `voxels_an_item`: about
  // how many of a slice's voxels one work-item takes (fewer: more work-items in flight, more partial sums for the host
  // to add); 0: 4 for grids below 400,000 voxels, 8 above (H200: 64x64x33 0.014-0.019 ms with 4, 0.019-0.022 with 8;
  // 104x104x72 0.023-0.025 with 8, 0.025 with 4, and half the host's additions).
  static constexpr size_t kDefaultVoxelsAnItem = 0;
  DeviceQaVolumePass(Device& device, std::array<int64_t, 3> dims, std::span<const uint8_t> mask,
                     std::span<const int> carpet_voxels, ResultArena* arena = nullptr,
                     size_t voxels_an_item = kDefaultVoxelsAnItem);
  // The bytes of results (for sizing an arena).
  static size_t result_bytes(std::array<int64_t, 3> dims, size_t carpet_rows,
                             size_t voxels_an_item = kDefaultVoxelsAnItem);

  // Enqueues the pass over slot `newest` of `ring` (slot s at s * the grid's voxels) and its read: `cumulative` counts
  // the volume; `sliding` (null: none) counts it too and, with `leaving` >= 0, drops that slot's volume (a window
  // that is full: its count stays); DVARS against slot `previous` (-1: none). result() once the queue has finished.
  void enqueue(const DeviceBuffer<float>& ring, int newest, int previous, DeviceVoxelMoments& cumulative,
               DeviceVoxelMoments* sliding, int leaving);
  QaVolumeMeasures result() const;

  int64_t carpet_rows() const { return carpet_rows_; }

 private:
  static constexpr size_t kLocalSize = 128;
  Device& device_;
  std::array<int64_t, 3> dims_;
  int64_t voxels_;
  size_t chunks_ = 1;  // work-groups a slice
  int64_t carpet_rows_;
  ClKernel kernel_;
  DeviceBuffer<uint8_t> mask_;
  DeviceBuffer<int> carpet_row_;
  DeviceBuffer<float> out_;
  PinnedHost<float> out_pinned_;  // without an arena
  std::span<float> out_host_;
  bool arena_reads_ = false;
  bool pending_ = false, with_dvars_ = false;
};

}  // namespace rtf
