// DeviceQualityIndex: gather, sort, rank (per volume), then one sums launch and 64 partial triples added on the host.
#include "core/qa/quality_index.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/device/launch.hpp"

namespace rtf {

namespace {
constexpr size_t kAnyLocal = 64;
}  // namespace

DeviceQualityIndex::DeviceQualityIndex(Device& device, std::span<const uint8_t> mask)
    : device_(device),
      voxels_(static_cast<int64_t>(mask.size())),
      gather_(device.kernel("rank_correlation.cl", "gather_masked", {fmt::format("LOCAL_SIZE={}", kLocalSize)})),
      bitonic_(device.kernel("rank_correlation.cl", "bitonic_step", {fmt::format("LOCAL_SIZE={}", kLocalSize)})),
      ranks_kernel_(device.kernel("rank_correlation.cl", "average_ranks", {fmt::format("LOCAL_SIZE={}", kLocalSize)})),
      sums_(device.kernel("rank_correlation.cl", "rank_sums", {fmt::format("LOCAL_SIZE={}", kLocalSize)})) {
  if (mask.empty() || voxels_ > std::numeric_limits<int>::max() / 2) {
    throw std::invalid_argument(fmt::format("DeviceQualityIndex: a mask of {} voxels", mask.size()));
  }
  std::vector<int> masked;
  for (size_t v = 0; v < mask.size(); ++v) {
    if (mask[v] != 0) masked.push_back(static_cast<int>(v));
  }
  count_ = static_cast<int>(masked.size());
  while (padded_ < count_) padded_ *= 2;
  const auto n = static_cast<size_t>(std::max(count_, 1));
  masked_ = DeviceBuffer<int>(device, n);
  if (count_ > 0) masked_.write(device.queue(), masked);
  bad_ = DeviceBuffer<int>(device, 1);
  reference_ranks_ = DeviceBuffer<int>(device, n);
  volume_ranks_ = DeviceBuffer<int>(device, n);
  values_ = DeviceBuffer<float>(device, n);
  sorted_ = DeviceBuffer<float>(device, static_cast<size_t>(padded_));
  partials_ = DeviceBuffer<int64_t>(device, 3 * kGroups);
}

bool DeviceQualityIndex::rank(const DeviceBuffer<float>& volume, DeviceBuffer<int>& ranks) {
  if (volume.size() < static_cast<size_t>(voxels_)) {
    throw std::invalid_argument(
        fmt::format("DeviceQualityIndex: a volume of {} floats for a mask of {} voxels", volume.size(), voxels_));
  }
  const cl_command_queue q = device_.queue();
  bad_.fill(q, 0);
  set_args(gather_, volume, masked_, count_, padded_, values_, sorted_, bad_);
  launch<1>(q, gather_, {static_cast<size_t>(padded_)}, {kAnyLocal});
  for (int k = 2; k <= padded_; k *= 2) {
    for (int j = k / 2; j > 0; j /= 2) {
      set_args(bitonic_, sorted_, padded_, k, j);
      launch<1>(q, bitonic_, {static_cast<size_t>(padded_)}, {kAnyLocal});
    }
  }
  set_args(ranks_kernel_, values_, sorted_, count_, ranks);
  launch<1>(q, ranks_kernel_, {static_cast<size_t>(count_)}, {kAnyLocal});
  return bad_.read_all(q)[0] == 0;
}

void DeviceQualityIndex::set_reference(const DeviceBuffer<float>& reference) {
  reference_set_ = true;
  reference_finite_ = count_ > 0 && rank(reference, reference_ranks_);
}

double DeviceQualityIndex::quality(const DeviceBuffer<float>& volume) {
  if (!reference_set_) throw std::logic_error("DeviceQualityIndex: no reference volume set");
  constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();
  if (count_ < 2 || !reference_finite_ || !rank(volume, volume_ranks_)) return kUndefined;
  set_args(sums_, volume_ranks_, reference_ranks_, count_, partials_);
  launch<1>(device_.queue(), sums_, {static_cast<size_t>(kGroups) * kLocalSize}, {size_t{kLocalSize}});
  const std::vector<int64_t> partials = partials_.read_all(device_.queue());
  int64_t ab = 0, aa = 0, bb = 0;
  for (int g = 0; g < kGroups; ++g) {
    ab += partials[static_cast<size_t>(3 * g)];
    aa += partials[static_cast<size_t>(3 * g + 1)];
    bb += partials[static_cast<size_t>(3 * g + 2)];
  }
  if (bb == 0) return kUndefined;  // a constant reference ranks nothing
  if (aa == 0) return 1.0;         // a constant volume: correlation 0, as AFNI's 3dTqual gives it
  return 1.0 - static_cast<double>(ab) / std::sqrt(static_cast<double>(aa) * static_cast<double>(bb));
}

}  // namespace rtf
