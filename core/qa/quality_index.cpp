// DeviceQualityIndex: per batch of rows one gather, the bitonic sort's steps, one rank launch and one sums launch, and
// the partial triples added on the host.
#include "core/qa/quality_index.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/device/launch.hpp"

namespace rtf {

namespace {
constexpr size_t kAnyLocal = 64;
constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();
}  // namespace

DeviceQualityIndex::DeviceQualityIndex(Device& device, std::span<const uint8_t> mask, int64_t batch_bytes)
    : device_(device), voxels_(static_cast<int64_t>(mask.size())) {
  if (mask.empty() || voxels_ > std::numeric_limits<int>::max() / 2) {
    throw std::invalid_argument(fmt::format("DeviceQualityIndex: a mask of {} voxels", mask.size()));
  }
  // The local bitonic block: the device's largest work-group, at most 1024 (4 KB of local memory).
  block_ = static_cast<int>(std::clamp<size_t>(device.info().max_work_group_size, 1, 1024));
  while ((block_ & (block_ - 1)) != 0) block_ &= block_ - 1;  // a power of two
  const std::vector<std::string> defines{fmt::format("LOCAL_SIZE={}", kLocalSize),
                                         fmt::format("BITONIC_LOCAL={}", block_)};
  gather_ = device.kernel("rank_correlation.cl", "gather_masked", defines);
  bitonic_ = device.kernel("rank_correlation.cl", "bitonic_step", defines);
  bitonic_local_ = device.kernel("rank_correlation.cl", "bitonic_local", defines);
  ranks_kernel_ = device.kernel("rank_correlation.cl", "average_ranks", defines);
  sums_ = device.kernel("rank_correlation.cl", "rank_sums", defines);
  std::vector<int> masked;
  for (size_t v = 0; v < mask.size(); ++v) {
    if (mask[v] != 0) masked.push_back(static_cast<int>(v));
  }
  count_ = static_cast<int>(masked.size());
  while (padded_ < count_) padded_ *= 2;
  const auto n = static_cast<size_t>(std::max(count_, 1));
  const int64_t row_bytes = int64_t{4} * (2 * static_cast<int64_t>(n) + padded_) + 8 * 3 * kGroups;
  max_rows_ = static_cast<int>(std::clamp<int64_t>(batch_bytes / row_bytes, 1, 4096));
  const auto rows = static_cast<size_t>(max_rows_);
  masked_ = DeviceBuffer<int>(device, n);
  if (count_ > 0) masked_.write(device.queue(), masked);
  bad_ = DeviceBuffer<int>(device, rows);
  reference_ranks_ = DeviceBuffer<int>(device, n);
  ranks_ = DeviceBuffer<int>(device, n * rows);
  values_ = DeviceBuffer<float>(device, n * rows);
  sorted_ = DeviceBuffer<float>(device, static_cast<size_t>(padded_) * rows);
  partials_ = DeviceBuffer<int64_t>(device, 3 * kGroups * rows);
}

void DeviceQualityIndex::check(const DeviceBuffer<float>& volumes, int count) const {
  if (count < 1 || volumes.size() < static_cast<size_t>(voxels_) * static_cast<size_t>(count)) {
    throw std::invalid_argument(fmt::format("DeviceQualityIndex: {} floats for {} volume(s) of a mask of {} voxels",
                                            volumes.size(), count, voxels_));
  }
}

std::vector<bool> DeviceQualityIndex::rank(const DeviceBuffer<float>& volumes, int first, int rows,
                                           DeviceBuffer<int>& ranks) {
  const cl_command_queue q = device_.queue();
  const auto r = static_cast<size_t>(rows);
  bad_.fill(q, 0);
  set_args(gather_, volumes, static_cast<int>(voxels_), first, masked_, count_, padded_, values_, sorted_, bad_);
  launch<2>(q, gather_, {static_cast<size_t>(padded_), r}, {kAnyLocal, 1});
  // Bitonic sort: the steps within a block of `block` elements in local memory (one launch to sort every block, then
  // one per larger k for its steps below the block), the steps across blocks one launch each.
  const int block = std::min(block_, padded_);
  const auto local_launch = [&](int k_first, int k_last, int j_first) {
    set_args(bitonic_local_, sorted_, padded_, k_first, k_last, j_first);
    launch<2>(q, bitonic_local_, {static_cast<size_t>(padded_), r}, {static_cast<size_t>(block), 1});
  };
  if (block >= 2) local_launch(2, block, 1);
  for (int k = 2 * block; k <= padded_; k *= 2) {
    for (int j = k / 2; j >= block; j /= 2) {
      set_args(bitonic_, sorted_, padded_, k, j);
      launch<2>(q, bitonic_, {static_cast<size_t>(padded_), r}, {kAnyLocal, 1});
    }
    if (block >= 2) local_launch(k, k, block / 2);
  }
  set_args(ranks_kernel_, values_, sorted_, count_, padded_, ranks);
  launch<2>(q, ranks_kernel_, {static_cast<size_t>(count_), r}, {kAnyLocal, 1});
  std::vector<int> bad(r);
  bad_.read(q, bad);
  std::vector<bool> finite(r);
  for (size_t i = 0; i < r; ++i) finite[i] = bad[i] == 0;
  return finite;
}

void DeviceQualityIndex::set_reference(const DeviceBuffer<float>& reference) {
  check(reference, 1);
  reference_set_ = true;
  reference_finite_ = count_ > 0 && rank(reference, 0, 1, reference_ranks_)[0];
}

std::vector<double> DeviceQualityIndex::correlate(int rows, const std::vector<bool>& finite) {
  const auto r = static_cast<size_t>(rows);
  set_args(sums_, ranks_, reference_ranks_, count_, partials_);
  launch<2>(device_.queue(), sums_, {static_cast<size_t>(kGroups) * kLocalSize, r}, {size_t{kLocalSize}, 1});
  std::vector<int64_t> partials(3 * kGroups * r);
  partials_.read(device_.queue(), partials);
  std::vector<double> out(r, kUndefined);
  for (size_t row = 0; row < r; ++row) {
    int64_t ab = 0, aa = 0, bb = 0;
    for (size_t g = 0; g < kGroups; ++g) {
      const size_t at = 3 * (row * kGroups + g);
      ab += partials[at];
      aa += partials[at + 1];
      bb += partials[at + 2];
    }
    if (!finite[row] || bb == 0) continue;  // a constant reference ranks nothing
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
  if (!reference_set_) throw std::logic_error("DeviceQualityIndex: no reference volume set");
  if (slot < 0) throw std::invalid_argument(fmt::format("DeviceQualityIndex: slot {}", slot));
  check(volumes, slot + 1);
  if (count_ < 2 || !reference_finite_) return kUndefined;
  const std::vector<bool> finite = rank(volumes, slot, 1, ranks_);
  return correlate(1, finite)[0];
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
    const std::vector<bool> finite = rank(run, first, rows, ranks_);
    const std::vector<double> batch = correlate(rows, finite);
    out.insert(out.end(), batch.begin(), batch.end());
  }
  return out;
}

}  // namespace rtf
