// DeviceMaskedMedian: the sort's launches, one single-item launch, a 12-byte read.
#include "core/qa/masked_median.hpp"

#include <fmt/format.h>

#include <bit>
#include <limits>
#include <stdexcept>

#include "core/device/launch.hpp"
#include "core/qa/masked_sort.hpp"

namespace rtf {

DeviceMaskedMedian::DeviceMaskedMedian(Device& device, std::span<const uint8_t> mask, int merge_ways)
    : device_(device),
      sort_(std::make_unique<DeviceMaskedSort>(device, mask, 1, merge_ways)),
      middle_kernel_(device.kernel("rank_correlation.cl", "sorted_middle",
                                   {fmt::format("LOCAL_SIZE={}", DeviceMaskedSort::kLocalSize),
                                    fmt::format("TILE={}", DeviceMaskedSort::kTile)})),
      middle_(device, 3),
      middle_host_(device, 3) {}

DeviceMaskedMedian::~DeviceMaskedMedian() = default;

void DeviceMaskedMedian::enqueue(const DeviceBuffer<float>& volume) {
  pending_ = true;
  if (sort_->count() == 0) {
    middle_host_[2] = 0;
    return;
  }
  const DeviceBuffer<uint32_t>& sorted = sort_->enqueue(volume, 0, 1);
  set_args(middle_kernel_, sorted, sort_->count(), middle_);
  launch<1>(device_.queue(), middle_kernel_, {1}, {1}, {}, EventMode::kNone);
  middle_.read_async(device_.queue(), middle_host_.span());
}

double DeviceMaskedMedian::result() const {
  if (!pending_) throw std::logic_error("DeviceMaskedMedian: result() before enqueue()");
  if (middle_host_[2] == 0) return std::numeric_limits<double>::quiet_NaN();
  const auto a = static_cast<double>(std::bit_cast<float>(middle_host_[0]));
  const auto b = static_cast<double>(std::bit_cast<float>(middle_host_[1]));
  return 0.5 * (a + b);
}

double DeviceMaskedMedian::median(const DeviceBuffer<float>& volume) {
  enqueue(volume);
  RTF_CL_CHECK(clFinish(device_.queue()));
  return result();
}

}  // namespace rtf
