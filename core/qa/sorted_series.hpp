// DeviceSortedSeries: each masked voxel's series over the live ring, kept sorted on the device as the ring turns
// (kernels/sorted_series.cl): per TR one launch moves the newest value into place in every voxel's series (O(series)
// per voxel, no sort) and counts AFNI 3dToutcount's outliers of it (polort 0, as DeviceOutlierCount, the same
// numbers); the median volume of 3dTqual's quality index is read off the sorted series. docs/algorithms/qa.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/device/pinned_host.hpp"
#include "core/device/result_arena.hpp"

namespace rtf {

class DeviceSortedSeries {
 public:
  // How a row is updated: `lanes` work-items to a row in local memory (kShared, the default where the row fits:
  // coalesced loads, the move done at once) or one work-item walking its row (kPerItem). The same entries either way.
  enum class Kernel { kAuto, kShared, kPerItem };
  static constexpr int kDefaultLanes = 8;  // H200: 0.11 ms at 104x104x72 (32: 0.22, 16: 0.15, 4: 0.12)

  // `mask`: one byte per voxel (non-zero: inside); `capacity`: the ring's slots (>= 1); `lanes`: 4, 8, 16 or 32.
  // `arena`: where the outlier count goes (its owner reads it; null: the replace reads it itself).
  DeviceSortedSeries(Device& device, std::span<const uint8_t> mask, int capacity, Kernel kernel = Kernel::kAuto,
                     int lanes = kDefaultLanes, ResultArena* arena = nullptr);

  // Ring slot `slot` of `volumes` (slot s at s * the grid's voxels) holds a new volume: its values replace the slot's
  // old ones in each voxel's series (or join them while the ring fills). With `count_outliers`, the same launch counts
  // the masked voxels whose new value is an outlier of their series (every value finite, MAD > 0), for
  // outliers_result() once the queue has finished. Enqueued; nothing waits.
  void enqueue_replace(const DeviceBuffer<float>& volumes, int slot, bool count_outliers);
  int64_t outliers_result() const;

  // Each masked voxel's median over the series into `medians` (NaN where a value is not finite or the series is
  // empty; other voxels untouched). Enqueued.
  void enqueue_medians(DeviceBuffer<float>& medians);

  // Forgets every series (a new run, or a ring that moved on by more than its capacity).
  void clear();
  // Values in each voxel's series: the distinct slots replaced since clear(), at most the capacity.
  int held() const { return held_; }
  int64_t mask_voxels() const { return count_; }
  bool shared_rows() const { return shared_; }
  int lanes() const { return lanes_; }

 private:
  Device& device_;
  int64_t voxels_;
  int count_ = 0;
  int capacity_;
  int held_ = 0;
  std::vector<bool> slot_held_;
  ClKernel replace_, medians_;
  DeviceBuffer<int> masked_, nonfinite_, outliers_;  // outliers_: two counts, used in turn
  DeviceBuffer<float> values_, ordered_;             // the sorted series; each slot's value (kernels/sorted_series.cl)
  PinnedHost<int> outliers_pinned_;                  // the counts' read destination (page-locked) without an arena
  std::span<int> outliers_host_;                     // where the counts are read to (the arena's or outliers_pinned_)
  bool arena_reads_ = false;
  bool pending_ = false;
  int parity_ = 1;       // the outlier count of the latest replace is outliers_[parity_] (kernels/sorted_series.cl)
  bool shared_ = false;  // sorted_series_replace_shared
  int lanes_;            // its work-items a row
};

}  // namespace rtf
