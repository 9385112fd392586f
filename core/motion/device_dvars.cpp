// DeviceDvars: one reduction launch, a read of 64 partial pairs (started by enqueue_next, added by next_result), a
// device-side copy of the volume.
#include "core/motion/device_dvars.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/device/launch.hpp"

namespace rtf {

DeviceDvars::DeviceDvars(Device& device, std::span<const uint8_t> mask)
    : device_(device),
      n_(static_cast<int>(mask.size())),
      mask_empty_(std::all_of(mask.begin(), mask.end(), [](uint8_t m) { return m == 0; })),
      kernel_(device.kernel("masked_squared_difference.cl", "masked_squared_difference",
                            {fmt::format("LOCAL_SIZE={}", kLocalSize)})),
      mask_(device, std::max<size_t>(mask.size(), 1)),
      previous_(device, std::max<size_t>(mask.size(), 1)),
      partial_sum_(device, kGroups),
      partial_count_(device, kGroups) {
  if (mask.empty() || mask.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw std::invalid_argument(fmt::format("DeviceDvars: a mask of {} voxels", mask.size()));
  }
  mask_.write(device_.queue(), mask);
  sums_host_ = PinnedHost<float>(device, kGroups);
  counts_host_ = PinnedHost<int>(device, kGroups);
}

double DeviceDvars::next(const DeviceBuffer<float>& current) {
  enqueue_next(current);
  RTF_CL_CHECK(clFinish(device_.queue()));
  return next_result();
}

void DeviceDvars::enqueue_next(const DeviceBuffer<float>& current) {
  if (current.size() < static_cast<size_t>(n_)) {
    throw std::invalid_argument(fmt::format("DeviceDvars: a volume of {} floats, the mask has {}", current.size(), n_));
  }
  if (!has_previous_) {
    pending_ = Pending::kFirst;
  } else if (mask_empty_) {
    pending_ = Pending::kEmpty;
  } else {
    set_args(kernel_, current, previous_, mask_, partial_sum_, partial_count_, n_);
    launch<1>(device_.queue(), kernel_, {static_cast<size_t>(kGroups) * kLocalSize}, {size_t{kLocalSize}}, {},
              EventMode::kNone);
    partial_sum_.read_async(device_.queue(), sums_host_.span());
    partial_count_.read_async(device_.queue(), counts_host_.span());
    pending_ = Pending::kSums;
  }
  RTF_CL_CHECK(clEnqueueCopyBuffer(device_.queue(), current.get(), previous_.get(), 0, 0,
                                   static_cast<size_t>(n_) * sizeof(float), 0, nullptr, nullptr));
  has_previous_ = true;
}

double DeviceDvars::next_result() const {
  switch (pending_) {
    case Pending::kNone:
      throw std::logic_error("DeviceDvars: next_result() before enqueue_next()");
    case Pending::kFirst:
      return std::numeric_limits<double>::quiet_NaN();
    case Pending::kEmpty:
      return 0.0;
    case Pending::kSums:
      break;
  }
  double sum = 0.0;
  int64_t count = 0;
  for (int g = 0; g < kGroups; ++g) {
    sum += sums_host_[static_cast<size_t>(g)];
    count += counts_host_[static_cast<size_t>(g)];
  }
  return count > 0 ? std::sqrt(sum / static_cast<double>(count)) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace rtf
