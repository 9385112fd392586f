// DeviceQualityIndex: per batch of rows the sort's launches (core/qa/masked_sort.hpp), one rank launch and one sums
// launch, and the partial triples added on the host.
#include "core/qa/quality_index.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "core/device/launch.hpp"
#include "core/qa/masked_sort.hpp"

namespace rtf {

namespace {
constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();
}  // namespace

DeviceQualityIndex::DeviceQualityIndex(Device& device, std::span<const uint8_t> mask, int64_t batch_bytes,
                                       int merge_ways)
    : device_(device), voxels_(static_cast<int64_t>(mask.size())) {
  if (mask.empty() || voxels_ > std::numeric_limits<int>::max() / 2) {
    throw std::invalid_argument(fmt::format("DeviceQualityIndex: a mask of {} voxels", mask.size()));
  }
  if (merge_ways < 2 || merge_ways > 64) {
    throw std::invalid_argument(fmt::format("DeviceQualityIndex: runs merged {} at a time (2 to 64)", merge_ways));
  }
  const auto count = static_cast<int64_t>(std::count_if(mask.begin(), mask.end(), [](uint8_t m) { return m != 0; }));
  // Per row: the sort's buffers, the ranks (4 bytes a voxel), the partials.
  const int64_t row_bytes =
      DeviceMaskedSort::row_bytes(count) + 4 * std::max<int64_t>(count, 1) + int64_t{8} * 3 * kGroups;
  max_rows_ = static_cast<int>(std::clamp<int64_t>(batch_bytes / row_bytes, 1, 4096));
  sort_ = std::make_unique<DeviceMaskedSort>(device, mask, max_rows_, merge_ways);
  count_ = sort_->count();
  const std::vector<std::string> defines{fmt::format("LOCAL_SIZE={}", kLocalSize),
                                         fmt::format("TILE={}", DeviceMaskedSort::kTile)};
  ranks_kernel_ = device.kernel("rank_correlation.cl", "average_ranks", defines);
  sums_ = device.kernel("rank_correlation.cl", "rank_sums", defines);
  const auto n = static_cast<size_t>(std::max(count_, 1));
  const auto rows = static_cast<size_t>(max_rows_);
  reference_ranks_ = DeviceBuffer<int>(device, n);
  ranks_ = DeviceBuffer<int>(device, n * rows);
  partials_ = DeviceBuffer<int64_t>(device, 3 * kGroups * rows);
  bad_host_ = PinnedHost<int>(device, rows);
  partials_host_ = PinnedHost<int64_t>(device, 3 * kGroups * rows);
}

DeviceQualityIndex::~DeviceQualityIndex() = default;

void DeviceQualityIndex::check(const DeviceBuffer<float>& volumes, int count) const {
  if (count < 1 || volumes.size() < static_cast<size_t>(voxels_) * static_cast<size_t>(count)) {
    throw std::invalid_argument(fmt::format("DeviceQualityIndex: {} floats for {} volume(s) of a mask of {} voxels",
                                            volumes.size(), count, voxels_));
  }
}

void DeviceQualityIndex::enqueue_rank(const DeviceBuffer<float>& volumes, int first, int rows,
                                      DeviceBuffer<int>& ranks) {
  const cl_command_queue q = device_.queue();
  const auto r = static_cast<size_t>(rows);
  const auto n = static_cast<size_t>(count_);
  const DeviceBuffer<uint32_t>& sorted = sort_->enqueue(volumes, first, rows);
  set_args(ranks_kernel_, sort_->keys(), sorted, count_, sort_->total(), ranks);
  launch<2>(q, ranks_kernel_, {n, r}, {size_t{kLocalSize}, 1}, {}, EventMode::kNone);
  sort_->bad().read_async(q, bad_host_.span().first(r));
}

void DeviceQualityIndex::set_reference(const DeviceBuffer<float>& reference) {
  check(reference, 1);
  reference_set_ = true;
  reference_finite_ = false;
  if (count_ == 0) return;
  enqueue_rank(reference, 0, 1, reference_ranks_);
  RTF_CL_CHECK(clFinish(device_.queue()));
  reference_finite_ = bad_host_[0] == 0;
}

void DeviceQualityIndex::enqueue_sums(int rows) {
  const auto r = static_cast<size_t>(rows);
  set_args(sums_, ranks_, reference_ranks_, count_, partials_);
  launch<2>(device_.queue(), sums_, {static_cast<size_t>(kGroups) * kLocalSize, r}, {size_t{kLocalSize}, 1}, {},
            EventMode::kNone);
  partials_.read_async(device_.queue(), partials_host_.span().first(3 * kGroups * r));
}

std::vector<double> DeviceQualityIndex::correlations(int rows) const {
  const auto r = static_cast<size_t>(rows);
  std::vector<double> out(r, kUndefined);
  for (size_t row = 0; row < r; ++row) {
    int64_t ab = 0, aa = 0, bb = 0;
    for (size_t g = 0; g < kGroups; ++g) {
      const size_t at = 3 * (row * kGroups + g);
      ab += partials_host_[at];
      aa += partials_host_[at + 1];
      bb += partials_host_[at + 2];
    }
    if (bad_host_[row] != 0 || bb == 0) continue;  // a constant reference ranks nothing
    // A constant volume: correlation 0, as AFNI's 3dTqual gives it.
    out[row] =
        aa == 0 ? 1.0 : 1.0 - static_cast<double>(ab) / std::sqrt(static_cast<double>(aa) * static_cast<double>(bb));
  }
  return out;
}

double DeviceQualityIndex::quality(const DeviceBuffer<float>& volume) {
  return quality_every_volume(volume, 1)[0];
}

double DeviceQualityIndex::quality_of_slot(const DeviceBuffer<float>& volumes, int slot) {
  enqueue_quality_of_slot(volumes, slot);
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
  enqueue_rank(volumes, slot, 1, ranks_);
  enqueue_sums(1);
}

double DeviceQualityIndex::quality_result() const {
  if (!pending_) throw std::logic_error("DeviceQualityIndex: quality_result() before enqueue_quality_of_slot()");
  return pending_undefined_ ? kUndefined : correlations(1)[0];
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
    enqueue_rank(run, first, rows, ranks_);
    enqueue_sums(rows);
    RTF_CL_CHECK(clFinish(device_.queue()));
    const std::vector<double> batch = correlations(rows);
    out.insert(out.end(), batch.begin(), batch.end());
  }
  return out;
}

}  // namespace rtf
