// DeviceQualityIndex: per batch of rows the sort's launches (core/qa/masked_sort.hpp) and one launch ranking each value
// and summing the products by work-group, the partials added on the host; per live slot the bucket ranking
// (core/qa/bucket_ranks.hpp); the reference's ranks kept.
#include "core/qa/quality_index.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "core/device/launch.hpp"
#include "core/qa/bucket_ranks.hpp"
#include "core/qa/masked_sort.hpp"

namespace rtf {

namespace {
constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();
}  // namespace

DeviceQualityIndex::DeviceQualityIndex(Device& device, std::span<const uint8_t> mask, int64_t batch_bytes,
                                       int merge_ways, ResultArena* arena)
    : device_(device), voxels_(static_cast<int64_t>(mask.size())) {
  if (mask.empty() || voxels_ > std::numeric_limits<int>::max() / 2) {
    throw std::invalid_argument(fmt::format("DeviceQualityIndex: a mask of {} voxels", mask.size()));
  }
  if (merge_ways < 2 || merge_ways > 64) {
    throw std::invalid_argument(fmt::format("DeviceQualityIndex: runs merged {} at a time (2 to 64)", merge_ways));
  }
  const auto count = static_cast<int64_t>(std::count_if(mask.begin(), mask.end(), [](uint8_t m) { return m != 0; }));
  // Per row: the sort's buffers and the partials (4 longs a work-group of the sums).
  groups_ = static_cast<int>(live_result_bytes(count) / (4 * sizeof(int64_t)));
  const int64_t row_bytes = DeviceMaskedSort::row_bytes(count) + int64_t{8} * 4 * groups_;
  max_rows_ = static_cast<int>(std::clamp<int64_t>(batch_bytes / row_bytes, 1, 4096));
  sort_ = std::make_unique<DeviceMaskedSort>(device, mask, max_rows_, merge_ways);
  count_ = sort_->count();
  const std::vector<std::string> defines{fmt::format("LOCAL_SIZE={}", kLocalSize),
                                         fmt::format("TILE={}", DeviceMaskedSort::kTile)};
  ranks_kernel_ = device.kernel("rank_correlation.cl", "average_ranks", defines);
  sums_ = device.kernel("rank_correlation.cl", "rank_sums", defines);
  const auto n = static_cast<size_t>(std::max(count_, 1));
  const auto rows = static_cast<size_t>(max_rows_);
  const auto partials = 4 * static_cast<size_t>(groups_) * rows;
  reference_ranks_ = DeviceBuffer<int>(device, n);
  partials_ = DeviceBuffer<int64_t>(device, partials);
  bad_host_ = PinnedHost<int>(device, 1);
  partials_host_ = PinnedHost<int64_t>(device, partials);
  // A single slot's sums (the live stage) go to the arena, read with the stage's other results.
  buckets_ = std::make_unique<DeviceBucketRanks>(device, mask, arena);
  arena_reads_ = arena != nullptr;
}

DeviceQualityIndex::~DeviceQualityIndex() = default;

size_t DeviceQualityIndex::live_result_bytes(int64_t mask_voxels) {
  return DeviceBucketRanks::result_bytes(mask_voxels);
}

void DeviceQualityIndex::check(const DeviceBuffer<float>& volumes, int count) const {
  if (count < 1 || volumes.size() < static_cast<size_t>(voxels_) * static_cast<size_t>(count)) {
    throw std::invalid_argument(fmt::format("DeviceQualityIndex: {} floats for {} volume(s) of a mask of {} voxels",
                                            volumes.size(), count, voxels_));
  }
}

void DeviceQualityIndex::set_reference(const DeviceBuffer<float>& reference) {
  check(reference, 1);
  reference_set_ = true;
  reference_finite_ = false;
  if (count_ == 0) return;
  const cl_command_queue q = device_.queue();
  const DeviceBuffer<uint32_t>& sorted = sort_->enqueue(reference, 0, 1);
  set_args(ranks_kernel_, sort_->keys(), sorted, count_, sort_->total(), reference_ranks_);
  launch<1>(q, ranks_kernel_, {static_cast<size_t>(count_)}, {size_t{kLocalSize}}, {}, EventMode::kNone);
  buckets_->enqueue_set_reference(sorted, reference_ranks_);  // (before another sort takes the buffer)
  sort_->bad().read_async(q, bad_host_.span());
  RTF_CL_CHECK(clFinish(q));
  reference_finite_ = bad_host_[0] == 0;
}

void DeviceQualityIndex::enqueue_sums(const DeviceBuffer<float>& volumes, int first, int rows) {
  const auto r = static_cast<size_t>(rows);
  const DeviceBuffer<uint32_t>& sorted = sort_->enqueue(volumes, first, rows, false);
  set_args(sums_, sort_->keys(), sorted, count_, sort_->total(), reference_ranks_, partials_);
  launch<2>(device_.queue(), sums_, {static_cast<size_t>(groups_) * kLocalSize, r}, {size_t{kLocalSize}, 1}, {},
            EventMode::kNone);
  partials_.read_async(device_.queue(), partials_host_.span().first(4 * static_cast<size_t>(groups_) * r));
}

namespace {
// 1 - rho from the integer sums; NaN for non-finite values or a constant reference, 1 for a constant volume
// (correlation 0, as AFNI's 3dTqual gives it).
double quality_from_sums(int64_t ab, int64_t aa, int64_t bb, int64_t bad) {
  if (bad != 0 || bb == 0) return kUndefined;
  return aa == 0 ? 1.0 : 1.0 - static_cast<double>(ab) / std::sqrt(static_cast<double>(aa) * static_cast<double>(bb));
}
}  // namespace

std::vector<double> DeviceQualityIndex::correlations(int rows) const {
  const auto r = static_cast<size_t>(rows);
  std::vector<double> out(r, kUndefined);
  for (size_t row = 0; row < r; ++row) {
    int64_t ab = 0, aa = 0, bb = 0, bad = 0;
    const auto groups = static_cast<size_t>(groups_);
    const std::span<const int64_t> partials = partials_host_.span();
    for (size_t g = 0; g < groups; ++g) {
      const size_t at = 4 * (row * groups + g);
      ab += partials[at];
      aa += partials[at + 1];
      bb += partials[at + 2];
      bad += partials[at + 3];
    }
    out[row] = quality_from_sums(ab, aa, bb, bad);
  }
  return out;
}

double DeviceQualityIndex::quality(const DeviceBuffer<float>& volume) {
  return quality_every_volume(volume, 1)[0];
}

double DeviceQualityIndex::quality_of_slot(const DeviceBuffer<float>& volumes, int slot) {
  enqueue_quality_of_slot(volumes, slot);
  if (arena_reads_ && !pending_undefined_) buckets_->enqueue_read();  // (the arena's owner is not waiting)
  RTF_CL_CHECK(clFinish(device_.queue()));
  return quality_result();
}

void DeviceQualityIndex::enqueue_quality_of_slot(const DeviceBuffer<float>& volumes, int slot) {
  if (!reference_set_) throw std::logic_error("DeviceQualityIndex: no reference volume set");
  if (slot < 0) throw std::invalid_argument(fmt::format("DeviceQualityIndex: slot {}", slot));
  check(volumes, slot + 1);
  pending_ = true;
  pending_undefined_ = count_ < 2 || !reference_finite_;
  if (pending_undefined_) return;
  buckets_->enqueue(volumes, slot);
  pending_volumes_ = &volumes;
  pending_slot_ = slot;
}

double DeviceQualityIndex::quality_result() {
  if (!pending_) throw std::logic_error("DeviceQualityIndex: quality_result() before enqueue_quality_of_slot()");
  if (pending_undefined_) return kUndefined;
  const DeviceBucketRanks::Sums s = buckets_->result();
  if (s.nonfinite != 0) return kUndefined;
  if (!s.overflow) return quality_from_sums(s.ab, s.aa, s.bb, 0);
  // A volume unlike the reference (a bucket past its capacity): sorted and ranked as offline.
  ++reranked_;
  enqueue_sums(*pending_volumes_, pending_slot_, 1);
  RTF_CL_CHECK(clFinish(device_.queue()));
  return correlations(1)[0];
}

std::vector<double> DeviceQualityIndex::quality_every_volume(const DeviceBuffer<float>& run, int volumes) {
  if (!reference_set_) throw std::logic_error("DeviceQualityIndex: no reference volume set");
  check(run, volumes);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(volumes));
  for (int first = 0; first < volumes; first += max_rows_) {
    const int rows = std::min(max_rows_, volumes - first);
    if (count_ < 2 || !reference_finite_) {
      out.insert(out.end(), static_cast<size_t>(rows), kUndefined);
      continue;
    }
    enqueue_sums(run, first, rows);
    RTF_CL_CHECK(clFinish(device_.queue()));
    const std::vector<double> batch = correlations(rows);
    out.insert(out.end(), batch.begin(), batch.end());
  }
  return out;
}

}  // namespace rtf
