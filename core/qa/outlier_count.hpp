// DeviceOutlierCount: AFNI 3dToutcount's temporal outliers (polort 0: each voxel's series against its median), counted
// per volume over a mask on the device (kernels/outlier_count.cl). The live QA stage asks for the newest volume of the
// ring against the ring's series; `rtfmri qa` for every volume of a run against the whole run. docs/algorithms/qa.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"

namespace rtf {

class DeviceOutlierCount {
 public:
  // `mask`: one byte per voxel (non-zero: examined); `max_slots`: the longest series asked for; `scratch_bytes`: the
  // device memory for the voxels' series of one launch (more voxels than fit are examined in several launches).
  // `local_rows`: sort each voxel's series in local memory where 32 rows of max_slots (rounded up to a power of two)
  // fit (kernels/outlier_count.cl's count_outliers_local: coalesced loads, a bitonic sort shared by a work-group's
  // items; the live ring's case); false: always the scratch rows and quickselect (tests of both).
  DeviceOutlierCount(Device& device, std::span<const uint8_t> mask, int max_slots,
                     int64_t scratch_bytes = int64_t{256} << 20, bool local_rows = true);
  bool uses_local_rows() const { return local_kernel_.get() != nullptr; }

  // 3dToutcount's threshold on |x - median| in MADs for a series of n values: qginv(0.001 / n) * sqrt(pi / 2).
  static double threshold_scale(int n);

  // Every slot of `volumes` (`slots` volumes of the mask's voxels, slot s at s * voxels): how many masked voxels are
  // outliers there, against their series over all `slots`.
  std::vector<int64_t> count_every_volume(const DeviceBuffer<float>& volumes, int slots);
  // Only slot `newest` (the live volume) against the series of the `slots` filled slots.
  int64_t count_one_volume(const DeviceBuffer<float>& volumes, int slots, int newest);
  // The same in two steps: enqueue_one_volume() launches and starts the read; one_volume_result() once the queue has
  // finished.
  void enqueue_one_volume(const DeviceBuffer<float>& volumes, int slots, int newest);
  int64_t one_volume_result() const;

  // Each masked voxel's median over the `slots` volumes into `medians` (one volume; other voxels untouched; NaN where
  // the series holds a non-finite value): the median volume of AFNI 3dTqual.
  void medians(const DeviceBuffer<float>& volumes, int slots, DeviceBuffer<float>& medians);

  int64_t mask_voxels() const { return static_cast<int64_t>(masked_host_.size()); }

 private:
  void check(const DeviceBuffer<float>& volumes, int slots) const;
  void run(const DeviceBuffer<float>& volumes, int slots, int flag_slot);
  // Calls launch_chunk(first, count) for each chunk of the mask's voxels whose series fit the scratch rows.
  template <typename Launch>
  void for_each_chunk(Launch&& launch_chunk) const;

  Device& device_;
  int64_t voxels_;
  int max_slots_;
  int64_t chunk_;  // masked voxels per launch (scratch rows)
  std::vector<int> masked_host_;
  ClKernel kernel_, medians_kernel_;
  ClKernel local_kernel_, local_medians_;  // the *_local kernels, when the series fit local memory (null otherwise)
  DeviceBuffer<int> masked_;
  DeviceBuffer<float> scratch_;
  DeviceBuffer<int> outliers_;
  int pending_count_ = -1;  // the count read by enqueue_one_volume (-1: none pending; the mask is empty: 0)
  bool pending_ = false;
};

}  // namespace rtf
