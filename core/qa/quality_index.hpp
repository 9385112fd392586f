// DeviceQualityIndex: AFNI 3dTqual's quality index of a volume, 1 - Spearman's rank correlation with a reference volume
// (the run's voxel-wise median volume, DeviceOutlierCount::medians) over a mask, on the device and exact: average ranks
// of tied values as integers, integer sums. Every volume of a run in batches of rows (offline: the values sorted,
// core/qa/masked_sort.hpp, then each value's first and last place; kernels/rank_correlation.cl: 2 + log8(tiles of
// 1,024) launches per batch), or one volume of a ring (live: two launches, the reference's sorted values as the
// splitters of a sample sort, core/qa/bucket_ranks.hpp; a volume that fills a bucket past its capacity is sorted as
// offline, with one more wait).
// docs/algorithms/qa.md.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/device/pinned_host.hpp"
#include "core/device/result_arena.hpp"

namespace rtf {

class DeviceMaskedSort;
class DeviceBucketRanks;

class DeviceQualityIndex {
 public:
  // `mask`: one byte per voxel (non-zero: inside); `batch_bytes`: device memory for the rows of one batch;
  // `merge_ways`: sorted runs merged at a time (2..64; more: fewer launches, more binary searches a key).
  // (At least one row.) `arena`: where one slot's sums go (its owner reads them; null: read here).
  DeviceQualityIndex(Device& device, std::span<const uint8_t> mask, int64_t batch_bytes = int64_t{512} << 20,
                     int merge_ways = 8, ResultArena* arena = nullptr);
  ~DeviceQualityIndex();
  DeviceQualityIndex(const DeviceQualityIndex&) = delete;
  DeviceQualityIndex& operator=(const DeviceQualityIndex&) = delete;

  // The volume the others are compared with (at least the mask's voxels); its ranks (and the live path's splitters)
  // are kept. Waits for the device.
  void set_reference(const DeviceBuffer<float>& reference);
  // 1 - Spearman's rho of `volume` and the reference over the mask: 0 for a volume ranked as the reference, up to 2;
  // 1 for a constant volume (correlation 0, as AFNI's 3dTqual). NaN when the volume or the reference has a non-finite
  // value in the mask, the reference is constant there, or the mask has fewer than 2 voxels.
  double quality(const DeviceBuffer<float>& volume);
  // The same for slot `slot` of `volumes` (volume s at s * the grid's voxels): the live ring's newest volume.
  double quality_of_slot(const DeviceBuffer<float>& volumes, int slot);
  // The same in two steps, so that the live stage waits once for all its measures: enqueue_quality_of_slot() launches
  // and starts the reads; quality_result() once the queue has finished (`volumes` unchanged until then: a volume whose
  // bucket overflowed is ranked again from it, and that call waits for the device).
  void enqueue_quality_of_slot(const DeviceBuffer<float>& volumes, int slot);
  double quality_result();
  // How many volumes quality_result() had to rank again (their buckets overflowed) since construction.
  int64_t reranked() const { return reranked_; }
  // The same for each of the `volumes` volumes of `run` (volume t at t * the mask's voxels).
  std::vector<double> quality_every_volume(const DeviceBuffer<float>& run, int volumes);

  int64_t mask_voxels() const { return count_; }
  // The bytes one slot's sums take in an arena, for a mask of `mask_voxels` voxels.
  static size_t live_result_bytes(int64_t mask_voxels);

 private:
  static constexpr int kLocalSize = 256;
  // Enqueues the sort of volumes first .. first + rows - 1 of `volumes`, their rank sums with the reference and the
  // read of the partials into partials_host_.
  void enqueue_sums(const DeviceBuffer<float>& volumes, int first, int rows);
  // The quality index of each of the first `rows` rows from partials_host_ (the queue has finished).
  std::vector<double> correlations(int rows) const;
  void check(const DeviceBuffer<float>& volumes, int count) const;

  Device& device_;
  int64_t voxels_;
  int count_ = 0;
  int max_rows_ = 1;
  bool reference_set_ = false, reference_finite_ = false;
  bool pending_ = false, pending_undefined_ = false;
  std::unique_ptr<DeviceMaskedSort> sort_;
  std::unique_ptr<DeviceBucketRanks> buckets_;  // the live path (one slot)
  const DeviceBuffer<float>* pending_volumes_ = nullptr;
  int pending_slot_ = 0;
  int64_t reranked_ = 0;
  ClKernel ranks_kernel_, sums_;
  int groups_ = 1;  // rank_sums' work-groups a row
  DeviceBuffer<int> reference_ranks_;
  DeviceBuffer<int64_t> partials_;
  PinnedHost<int> bad_host_;  // the reads' destinations (page-locked): the reference's flag, the partials
  PinnedHost<int64_t> partials_host_;
  bool arena_reads_ = false;
};

}  // namespace rtf
