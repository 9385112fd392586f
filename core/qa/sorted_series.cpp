// DeviceSortedSeries: one replace launch per new volume (the outlier count's read started with it), one medians launch
// on request.
#include "core/qa/sorted_series.hpp"

#include <fmt/format.h>

#include <limits>
#include <stdexcept>

#include "core/device/launch.hpp"
#include "core/mask/masked_voxels.hpp"
#include "core/qa/outlier_count.hpp"

namespace rtf {

namespace {
constexpr size_t kLocalSize = 64;
constexpr size_t kSharedGroup = 128;  // sorted_series_replace_shared: work-items a group (kSharedGroup / lanes rows)

// sorted_series_replace_shared: the rows' distance in local memory, a multiple of 4 floats (aligned four-float
// stores) that is not one of 8 (rows of a warp probing the same place of their rows hit different banks).
size_t local_stride(int capacity) {
  return (static_cast<size_t>(capacity) + 7) / 8 * 8 + 4;
}

size_t shared_local_bytes(int capacity, int lanes) {
  return kSharedGroup / static_cast<size_t>(lanes) * local_stride(capacity) * sizeof(float);
}
}  // namespace

DeviceSortedSeries::DeviceSortedSeries(Device& device, std::span<const uint8_t> mask, int capacity, Kernel kernel,
                                       int lanes, ResultArena* arena)
    : device_(device), voxels_(static_cast<int64_t>(mask.size())), capacity_(capacity), lanes_(lanes) {
  if (lanes != 4 && lanes != 8 && lanes != 16 && lanes != 32) {
    throw std::invalid_argument(fmt::format("DeviceSortedSeries: {} work-items a row (4, 8, 16 or 32)", lanes));
  }
  if (mask.empty() || voxels_ > std::numeric_limits<int>::max() || capacity < 1 ||
      static_cast<int64_t>(mask.size()) * capacity > std::numeric_limits<int>::max()) {
    throw std::invalid_argument(
        fmt::format("DeviceSortedSeries: a mask of {} voxels, a ring of {} slots", mask.size(), capacity));
  }
  const std::vector<int> masked = masked_voxels(mask);
  count_ = static_cast<int>(masked.size());
  const auto n = static_cast<size_t>(std::max(count_, 1));
  // The shared kernel where its rows fit in half the local memory and a work-group of 128 is allowed (any GPU).
  const bool fits = capacity > 0 && shared_local_bytes(capacity, lanes) <= device.info().local_mem_bytes / 2 &&
                    device.info().max_work_group_size >= kSharedGroup;
  if (kernel == Kernel::kShared && !fits) {
    throw std::invalid_argument(fmt::format("DeviceSortedSeries: rows of {} do not fit the local memory", capacity));
  }
  shared_ = kernel == Kernel::kShared || (kernel == Kernel::kAuto && fits && device.info().is_gpu());
  const std::vector<std::string> defines{fmt::format("SERIES_LANES={}", lanes)};
  replace_ =
      device.kernel("sorted_series.cl", shared_ ? "sorted_series_replace_shared" : "sorted_series_replace", defines);
  medians_ = device.kernel("sorted_series.cl", "sorted_series_medians", defines);
  masked_ = upload_masked_voxels(device, masked);
  nonfinite_ = DeviceBuffer<int>(device, n);
  if (arena != nullptr) {
    outliers_ = arena->take<int>(2, outliers_host_);
    arena_reads_ = true;
  } else {
    outliers_ = DeviceBuffer<int>(device, 2);
    outliers_pinned_ = PinnedHost<int>(device, 2);
    outliers_host_ = outliers_pinned_.span();
  }
  values_ = DeviceBuffer<float>(device, n * static_cast<size_t>(capacity));
  ordered_ = DeviceBuffer<float>(device, n * static_cast<size_t>(capacity));
  clear();
}

void DeviceSortedSeries::clear() {
  nonfinite_.fill_async(device_.queue(), 0);
  outliers_.fill_async(device_.queue(), 0);
  slot_held_.assign(static_cast<size_t>(capacity_), false);
  held_ = 0;
  pending_ = false;
}

void DeviceSortedSeries::enqueue_replace(const DeviceBuffer<float>& volumes, int slot, bool count_outliers) {
  if (slot < 0 || slot >= capacity_) {
    throw std::invalid_argument(fmt::format("DeviceSortedSeries: slot {} of a ring of {}", slot, capacity_));
  }
  if (volumes.size() < static_cast<size_t>(voxels_) * static_cast<size_t>(slot + 1)) {
    throw std::invalid_argument(
        fmt::format("DeviceSortedSeries: {} floats hold no slot {} of {} voxels", volumes.size(), slot, voxels_));
  }
  const bool was_held = slot_held_[static_cast<size_t>(slot)];
  const int held_before = held_;
  if (!was_held) {
    slot_held_[static_cast<size_t>(slot)] = true;
    ++held_;
  }
  pending_ = count_outliers;
  parity_ = 1 - parity_;
  if (count_ == 0) return;
  const cl_command_queue q = device_.queue();
  const auto scale = static_cast<float>(DeviceOutlierCount::threshold_scale(held_));
  if (shared_) {
    const size_t rows = kSharedGroup / static_cast<size_t>(lanes_);
    set_args(replace_, volumes, static_cast<int>(voxels_), slot, masked_, count_, capacity_, held_before,
             was_held ? 1 : 0, values_, ordered_, nonfinite_, count_outliers ? 1 : 0, scale, outliers_, parity_,
             LocalMemory{shared_local_bytes(capacity_, lanes_)}, static_cast<int>(local_stride(capacity_)));
    const size_t groups = (static_cast<size_t>(count_) + rows - 1) / rows;
    launch<1>(q, replace_, {groups * kSharedGroup}, {kSharedGroup}, {}, EventMode::kNone);
  } else {
    set_args(replace_, volumes, static_cast<int>(voxels_), slot, masked_, count_, capacity_, held_before,
             was_held ? 1 : 0, values_, ordered_, nonfinite_, count_outliers ? 1 : 0, scale, outliers_, parity_);
    launch<1>(q, replace_, {static_cast<size_t>(count_)}, {kLocalSize}, {}, EventMode::kNone);
  }
  if (count_outliers && !arena_reads_) {
    outliers_.read_async(q, outliers_host_.subspan(static_cast<size_t>(parity_), 1), static_cast<size_t>(parity_));
  }
}

int64_t DeviceSortedSeries::outliers_result() const {
  if (!pending_) throw std::logic_error("DeviceSortedSeries: outliers_result() without a counting replace");
  return count_ == 0 ? 0 : outliers_host_[static_cast<size_t>(parity_)];
}

void DeviceSortedSeries::enqueue_medians(DeviceBuffer<float>& medians) {
  if (medians.size() < static_cast<size_t>(voxels_)) {
    throw std::invalid_argument(
        fmt::format("DeviceSortedSeries: a median volume of {} floats for {} voxels", medians.size(), voxels_));
  }
  if (count_ == 0) return;
  set_args(medians_, values_, masked_, count_, capacity_, held_, nonfinite_, medians);
  launch<1>(device_.queue(), medians_, {static_cast<size_t>(count_)}, {kLocalSize}, {}, EventMode::kNone);
}

}  // namespace rtf
