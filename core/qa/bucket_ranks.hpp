// DeviceBucketRanks: the rank sums of Spearman's correlation between one volume and a fixed reference ranking over a
// mask, exact, in two launches a volume (kernels/bucket_ranks.cl): the reference's sorted keys, taken every `bucket`
// values, are the splitters of a sample sort; each masked value goes to its bucket and each bucket's work-group ranks
// its values in local memory, offset by the earlier buckets' values. What the live quality index computes every TR
// (core/qa/quality_index.hpp) instead of sorting the volume (2 + log8(tiles) launches). A volume unlike the reference
// (a bucket gets more than its capacity) is flagged, not ranked wrongly: the caller ranks it another way.
// docs/algorithms/qa.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/device/pinned_host.hpp"
#include "core/device/result_arena.hpp"

namespace rtf {

class DeviceBucketRanks {
 public:
  static constexpr int kLocalSize = 256;
  static constexpr int kDefaultBucket = 256;  // reference values a bucket
  static constexpr int kMaxBuckets = 8192;    // the splitters held in local memory (32 KB)
  static constexpr int kMaxCapacity = 2048;   // values a bucket's work-group ranks in local memory

  // `mask`: one byte per voxel (non-zero: inside); `bucket`: the reference's values a bucket (>= 1; raised where the
  // mask would need more than kMaxBuckets); `capacity`: the values a bucket can take (1..kMaxCapacity; 0: 4 buckets'
  // worth, at most kMaxCapacity: H200, 104x104x72, 0.047 ms back to back where 8 buckets' worth took 0.052). `arena`:
  // where the sums go (its owner reads them; null: enqueue() reads them). `counter_stride`: ints between two buckets'
  // counters (1 to 64; 8: each on a 32-byte sector of its own).
  static constexpr int kDefaultCounterStride = 8;
  DeviceBucketRanks(Device& device, std::span<const uint8_t> mask, ResultArena* arena = nullptr,
                    int bucket = kDefaultBucket, int capacity = 0, int counter_stride = kDefaultCounterStride);

  // The reference: `sorted` its masked values' keys sorted ascending (float_sort_key, at least count() of them),
  // `ranks` its doubled centred average ranks (count() ints in mask order, kernels/rank_correlation.cl), which must
  // stay as they are while volumes are ranked against them. Enqueued.
  void enqueue_set_reference(const DeviceBuffer<uint32_t>& sorted, const DeviceBuffer<int>& ranks);

  // Enqueues the ranking of slot `slot` of `volumes` (volume s at s * the grid's voxels) against the reference and the
  // sums' read (the arena's owner reads them with its other results). Nothing waits.
  void enqueue(const DeviceBuffer<float>& volumes, int slot);

  struct Sums {
    int64_t ab = 0, aa = 0, bb = 0;  // of the volume's doubled centred ranks a and the reference's b
    int64_t nonfinite = 0;           // values not finite (not ranked)
    bool overflow = false;           // a bucket overflowed: the sums mean nothing
  };
  // Enqueues the read of the sums also where an arena's owner would read them (for a caller that waits itself).
  void enqueue_read() const { partials_.read_async(device_.queue(), partials_host_); }
  // The latest enqueue()'s sums, once the queue has finished.
  Sums result() const;
  // The latest enqueue()'s values per bucket (waits for the device; for benchmarks and tests).
  std::vector<int> bucket_counts() const;

  int count() const { return count_; }
  int buckets() const { return buckets_; }
  int bucket() const { return bucket_; }
  int capacity() const { return capacity_; }
  // The bytes the sums take in an arena for a mask of `mask_voxels` voxels.
  static size_t result_bytes(int64_t mask_voxels, int bucket = kDefaultBucket);

 private:
  static int bucket_for(int64_t count, int bucket);

  Device& device_;
  int64_t voxels_;
  int count_ = 0;
  int bucket_, buckets_ = 1, capacity_, counter_stride_, capacity_pow2_ = 1;
  int parity_ = 1;  // the latest enqueue() counted into counts set parity_ (kernels/bucket_ranks.cl)
  bool reference_set_ = false, pending_ = false;
  const DeviceBuffer<int>* ranks_ = nullptr;
  ClKernel splitters_kernel_, scatter_, rank_sums_;
  DeviceBuffer<int> masked_, counts_[2];
  DeviceBuffer<uint32_t> splitters_;
  DeviceBuffer<cl_uint2> storage_;
  DeviceBuffer<int64_t> partials_;
  PinnedHost<int64_t> partials_pinned_;
  std::span<int64_t> partials_host_;
  bool arena_reads_ = false;
};

}  // namespace rtf
