// DeviceOutlierCount: the mask's voxels in chunks whose scratch rows fit a fixed budget, one launch each, the counts
// read back once.
#include "core/qa/outlier_count.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

#include "core/device/launch.hpp"
#include "core/mask/masked_voxels.hpp"

namespace rtf {

namespace {
constexpr size_t kLocalSize = 64;
constexpr size_t kLocalRows = 32;   // voxels per work-group of count_outliers_local
constexpr size_t kSortItems = 256;  // its work-items
// Work-groups of count_outliers_local for `count` voxels.
size_t sort_groups(int count) {
  return (static_cast<size_t>(count) + kLocalRows - 1) / kLocalRows;
}
}  // namespace

double DeviceOutlierCount::threshold_scale(int n) {
  if (n < 1) throw std::invalid_argument("DeviceOutlierCount: a series of no values");
  const boost::math::normal standard;
  const double alpha = boost::math::quantile(boost::math::complement(standard, 0.001 / n));
  return alpha * std::sqrt(std::numbers::pi / 2.0);
}

DeviceOutlierCount::DeviceOutlierCount(Device& device, std::span<const uint8_t> mask, int max_slots,
                                       int64_t scratch_bytes, bool local_rows)
    : device_(device),
      voxels_(static_cast<int64_t>(mask.size())),
      max_slots_(max_slots),
      kernel_(device.kernel("outlier_count.cl", "count_outliers")),
      medians_kernel_(device.kernel("outlier_count.cl", "series_medians")) {
  if (mask.empty() || voxels_ > std::numeric_limits<int>::max() || max_slots < 1) {
    throw std::invalid_argument(
        fmt::format("DeviceOutlierCount: a mask of {} voxels, series of {} volumes", mask.size(), max_slots));
  }
  masked_host_ = masked_voxels(mask);
  const int64_t rows_in_budget = std::max<int64_t>(1, scratch_bytes / (int64_t{4} * max_slots));
  chunk_ = std::max<int64_t>(1, std::min<int64_t>(mask_voxels(), rows_in_budget));
  masked_ = upload_masked_voxels(device, masked_host_);
  scratch_ = DeviceBuffer<float>(device, static_cast<size_t>(chunk_ * max_slots));
  outliers_ = DeviceBuffer<int>(device, static_cast<size_t>(max_slots));
  uint64_t sorted_slots = 1;  // the rows' length in local memory: a power of two
  while (sorted_slots < static_cast<uint64_t>(max_slots)) sorted_slots *= 2;
  const uint64_t local_bytes = uint64_t{4} * kLocalRows * (sorted_slots + 2);
  if (local_rows && local_bytes + 1024 <= device.info().local_mem_bytes &&
      kSortItems <= device.info().max_work_group_size) {
    const std::vector<std::string> defines{fmt::format("SORTED_SLOTS={}", sorted_slots),
                                           fmt::format("LOCAL_ROWS={}", kLocalRows),
                                           fmt::format("LOCAL_SIZE={}", kSortItems)};
    local_kernel_ = device.kernel("outlier_count.cl", "count_outliers_local", defines);
    local_medians_ = device.kernel("outlier_count.cl", "series_medians_local", defines);
  }
}

void DeviceOutlierCount::check(const DeviceBuffer<float>& volumes, int slots) const {
  if (slots < 1 || slots > max_slots_) {
    throw std::invalid_argument(fmt::format("DeviceOutlierCount: {} volumes (1 to {})", slots, max_slots_));
  }
  if (volumes.size() < static_cast<size_t>(voxels_) * static_cast<size_t>(slots)) {
    throw std::invalid_argument(fmt::format("DeviceOutlierCount: {} floats hold fewer than {} volumes of {} voxels",
                                            volumes.size(), slots, voxels_));
  }
}

template <typename Launch>
void DeviceOutlierCount::for_each_chunk(Launch&& launch_chunk) const {
  for (int64_t first = 0; first < mask_voxels(); first += chunk_) {
    launch_chunk(static_cast<int>(first), static_cast<int>(std::min(chunk_, mask_voxels() - first)));
  }
}

void DeviceOutlierCount::run(const DeviceBuffer<float>& volumes, int slots, int flag_slot) {
  check(volumes, slots);
  outliers_.fill_async(device_.queue(), 0);
  const auto scale = static_cast<float>(threshold_scale(slots));
  for_each_chunk([&](int first, int count) {
    if (uses_local_rows()) {
      set_args(local_kernel_, volumes, slots, static_cast<int>(voxels_), masked_, first, count, outliers_, scale,
               flag_slot);
      launch<1>(device_.queue(), local_kernel_, {sort_groups(count) * kSortItems}, {kSortItems});
      return;
    }
    set_args(kernel_, volumes, slots, static_cast<int>(voxels_), masked_, first, count, scratch_, outliers_, scale,
             flag_slot);
    launch<1>(device_.queue(), kernel_, {static_cast<size_t>(count)}, {kLocalSize});
  });
}

std::vector<int64_t> DeviceOutlierCount::count_every_volume(const DeviceBuffer<float>& volumes, int slots) {
  std::vector<int64_t> counts(static_cast<size_t>(slots), 0);
  if (mask_voxels() == 0) return counts;
  run(volumes, slots, -1);
  std::vector<int> got(static_cast<size_t>(slots));
  outliers_.read(device_.queue(), got);
  std::copy(got.begin(), got.end(), counts.begin());
  return counts;
}

int64_t DeviceOutlierCount::count_one_volume(const DeviceBuffer<float>& volumes, int slots, int newest) {
  enqueue_one_volume(volumes, slots, newest);
  RTF_CL_CHECK(clFinish(device_.queue()));
  return one_volume_result();
}

void DeviceOutlierCount::enqueue_one_volume(const DeviceBuffer<float>& volumes, int slots, int newest) {
  if (newest < 0 || newest >= slots) {
    throw std::invalid_argument(fmt::format("DeviceOutlierCount: slot {} of {}", newest, slots));
  }
  pending_ = true;
  pending_count_ = 0;
  if (mask_voxels() == 0) return;
  run(volumes, slots, newest);
  outliers_.read_async(device_.queue(), std::span<int>(&pending_count_, 1), static_cast<size_t>(newest));
}

int64_t DeviceOutlierCount::one_volume_result() const {
  if (!pending_) throw std::logic_error("DeviceOutlierCount: one_volume_result() before enqueue_one_volume()");
  return pending_count_;
}

void DeviceOutlierCount::medians(const DeviceBuffer<float>& volumes, int slots, DeviceBuffer<float>& medians) {
  check(volumes, slots);
  if (medians.size() < static_cast<size_t>(voxels_)) {
    throw std::invalid_argument(
        fmt::format("DeviceOutlierCount: a median volume of {} floats for {} voxels", medians.size(), voxels_));
  }
  for_each_chunk([&](int first, int count) {
    if (uses_local_rows()) {
      set_args(local_medians_, volumes, slots, static_cast<int>(voxels_), masked_, first, count, medians);
      launch<1>(device_.queue(), local_medians_, {sort_groups(count) * kSortItems}, {kSortItems});
      return;
    }
    set_args(medians_kernel_, volumes, slots, static_cast<int>(voxels_), masked_, first, count, scratch_, medians);
    launch<1>(device_.queue(), medians_kernel_, {static_cast<size_t>(count)}, {kLocalSize});
  });
}

}  // namespace rtf
