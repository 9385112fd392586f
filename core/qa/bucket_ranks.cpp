// DeviceBucketRanks: the splitters copied out of the reference's sort once, then per volume the scatter and the
// buckets' rank sums (two launches, the counts' sets used in turn), the partials added on the host.
#include "core/qa/bucket_ranks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/device/launch.hpp"
#include "core/mask/masked_voxels.hpp"

namespace rtf {

int DeviceBucketRanks::bucket_for(int64_t count, int bucket) {
  const int64_t fewest = (count + kMaxBuckets - 1) / kMaxBuckets;  // so that the buckets stay <= kMaxBuckets
  return static_cast<int>(std::max<int64_t>(bucket, std::max<int64_t>(fewest, 1)));
}

size_t DeviceBucketRanks::result_bytes(int64_t mask_voxels, int bucket) {
  const int64_t count = std::max<int64_t>(mask_voxels, 1);
  const int64_t b = bucket_for(count, std::max(bucket, 1));
  return sizeof(int64_t) * static_cast<size_t>(4 * ((count + b - 1) / b) + 1);
}

DeviceBucketRanks::DeviceBucketRanks(Device& device, std::span<const uint8_t> mask, ResultArena* arena, int bucket,
                                     int capacity, int counter_stride)
    : device_(device),
      voxels_(static_cast<int64_t>(mask.size())),
      bucket_(bucket),
      capacity_(capacity),
      counter_stride_(counter_stride) {
  if (mask.empty() || voxels_ > std::numeric_limits<int>::max() / 2) {
    throw std::invalid_argument(fmt::format("DeviceBucketRanks: a mask of {} voxels", mask.size()));
  }
  if (bucket < 1) throw std::invalid_argument(fmt::format("DeviceBucketRanks: {} values a bucket", bucket));
  if (capacity < 0 || capacity > kMaxCapacity) {
    throw std::invalid_argument(
        fmt::format("DeviceBucketRanks: a bucket's capacity of {} (1 to {}, 0: the default)", capacity, kMaxCapacity));
  }
  if (counter_stride < 1 || counter_stride > 64) {
    throw std::invalid_argument(fmt::format("DeviceBucketRanks: counters {} ints apart (1 to 64)", counter_stride));
  }
  if (static_cast<size_t>(kLocalSize) > device.info().max_work_group_size) {
    throw std::runtime_error(fmt::format("DeviceBucketRanks: the device's work-groups hold {} items, {} needed",
                                         device.info().max_work_group_size, kLocalSize));
  }
  const std::vector<int> masked = masked_voxels(mask);
  count_ = static_cast<int>(masked.size());
  const int64_t n = std::max(count_, 1);
  bucket_ = bucket_for(n, bucket);
  buckets_ = static_cast<int>((n + bucket_ - 1) / bucket_);
  if (capacity_ == 0) capacity_ = static_cast<int>(std::min<int64_t>(int64_t{4} * bucket_, kMaxCapacity));
  capacity_pow2_ = 1;
  while (capacity_pow2_ < capacity_) capacity_pow2_ <<= 1;
  // Only the values a work-item holds are compiled in: the programs serve every mask and setting.
  const std::vector<std::string> defines{fmt::format("LOCAL_SIZE={}", kLocalSize),
                                         fmt::format("PER_ITEM={}", std::max(1, capacity_pow2_ / kLocalSize))};
  splitters_kernel_ = device.kernel("bucket_ranks.cl", "bucket_splitters", defines);
  scatter_ = device.kernel("bucket_ranks.cl", "bucket_scatter", defines);
  rank_sums_ = device.kernel("bucket_ranks.cl", "bucket_rank_sums", defines);
  masked_ = upload_masked_voxels(device, masked);
  for (DeviceBuffer<int>& c : counts_) {
    c = DeviceBuffer<int>(device, (static_cast<size_t>(buckets_) + 1) * static_cast<size_t>(counter_stride_));
    c.fill(device.queue(), 0);
  }
  splitters_ = DeviceBuffer<uint32_t>(device, static_cast<size_t>(std::max(buckets_ - 1, 1)));
  storage_ = DeviceBuffer<cl_uint2>(device, static_cast<size_t>(buckets_) * static_cast<size_t>(capacity_));
  const size_t partials = 4 * static_cast<size_t>(buckets_) + 1;
  if (arena != nullptr) {
    partials_ = arena->take<int64_t>(partials, partials_host_);
    arena_reads_ = true;
  } else {
    partials_ = DeviceBuffer<int64_t>(device, partials);
    partials_pinned_ = PinnedHost<int64_t>(device, partials);
    partials_host_ = partials_pinned_.span();
  }
}

void DeviceBucketRanks::enqueue_set_reference(const DeviceBuffer<uint32_t>& sorted, const DeviceBuffer<int>& ranks) {
  if (sorted.size() < static_cast<size_t>(count_) || ranks.size() < static_cast<size_t>(count_)) {
    throw std::invalid_argument(fmt::format("DeviceBucketRanks: a reference of {} keys and {} ranks for {} voxels",
                                            sorted.size(), ranks.size(), count_));
  }
  ranks_ = &ranks;
  reference_set_ = true;
  if (buckets_ < 2) return;
  set_args(splitters_kernel_, sorted, splitters_, buckets_ - 1, bucket_);
  launch<1>(device_.queue(), splitters_kernel_, {static_cast<size_t>(buckets_ - 1)}, {size_t{kLocalSize}}, {},
            EventMode::kNone);
}

void DeviceBucketRanks::enqueue(const DeviceBuffer<float>& volumes, int slot) {
  if (!reference_set_) throw std::logic_error("DeviceBucketRanks: no reference set");
  if (slot < 0 || volumes.size() < static_cast<size_t>(voxels_) * (static_cast<size_t>(slot) + 1)) {
    throw std::invalid_argument(
        fmt::format("DeviceBucketRanks: slot {} of {} floats (volumes of {})", slot, volumes.size(), voxels_));
  }
  pending_ = true;
  if (count_ == 0) return;
  parity_ = 1 - parity_;
  const cl_command_queue q = device_.queue();
  const int nsplit = buckets_ - 1;
  set_args(scatter_, volumes, static_cast<int>(voxels_), slot, masked_, count_, *ranks_, splitters_, nsplit,
           counts_[parity_], counter_stride_, storage_, capacity_,
           LocalMemory{sizeof(uint32_t) * static_cast<size_t>(std::max(nsplit, 1))});
  launch<1>(q, scatter_, {static_cast<size_t>(count_)}, {size_t{kLocalSize}}, {}, EventMode::kNone);
  set_args(rank_sums_, counts_[parity_], counts_[1 - parity_], nsplit, counter_stride_, count_, storage_, capacity_,
           partials_, LocalMemory{sizeof(uint32_t) * static_cast<size_t>(capacity_pow2_)});
  launch<1>(q, rank_sums_, {static_cast<size_t>(buckets_) * kLocalSize}, {size_t{kLocalSize}}, {}, EventMode::kNone);
  if (!arena_reads_) partials_.read_async(q, partials_host_);
}

DeviceBucketRanks::Sums DeviceBucketRanks::result() const {
  if (!pending_) throw std::logic_error("DeviceBucketRanks: result() before enqueue()");
  Sums s;
  if (count_ == 0) return s;
  for (size_t b = 0; b < static_cast<size_t>(buckets_); ++b) {
    s.ab += partials_host_[4 * b];
    s.aa += partials_host_[4 * b + 1];
    s.bb += partials_host_[4 * b + 2];
    s.overflow = s.overflow || partials_host_[4 * b + 3] != 0;
  }
  s.nonfinite = partials_host_[4 * static_cast<size_t>(buckets_)];
  return s;
}

std::vector<int> DeviceBucketRanks::bucket_counts() const {
  if (!pending_) throw std::logic_error("DeviceBucketRanks: bucket_counts() before enqueue()");
  std::vector<int> out(static_cast<size_t>(buckets_));
  if (count_ == 0) return out;
  const std::vector<int> all = counts_[parity_].read_all(device_.queue());
  for (size_t b = 0; b < out.size(); ++b) out[b] = all[b * static_cast<size_t>(counter_stride_)];
  return out;
}

}  // namespace rtf
