// DeviceSliceMeans: one launch of nz work-groups, a read of their items' partial sums and counts (started by enqueue),
// added in double by result().
#include "core/qa/slice_means.hpp"

#include <fmt/format.h>

#include <limits>
#include <stdexcept>

#include "core/device/cl_error.hpp"
#include "core/device/launch.hpp"

namespace rtf {

DeviceSliceMeans::DeviceSliceMeans(Device& device, std::array<int64_t, 3> dims, std::span<const uint8_t> mask)
    : device_(device),
      dims_(dims),
      kernel_(device.kernel("slice_means.cl", "slice_sums", {fmt::format("LOCAL_SIZE={}", kLocalSize)})),
      mask_(device, std::max<size_t>(mask.size(), 1)),
      sums_(device, static_cast<size_t>(dims[2] > 0 ? dims[2] : 1) * kLocalSize),
      counts_(device, static_cast<size_t>(dims[2] > 0 ? dims[2] : 1) * kLocalSize) {
  const int64_t voxels = dims[0] * dims[1] * dims[2];
  if (dims[0] <= 0 || dims[1] <= 0 || dims[2] <= 0 || voxels > std::numeric_limits<int>::max()) {
    throw std::invalid_argument(fmt::format("DeviceSliceMeans: a grid of {}x{}x{}", dims[0], dims[1], dims[2]));
  }
  if (mask.size() != static_cast<size_t>(voxels)) {
    throw std::invalid_argument(
        fmt::format("DeviceSliceMeans: a mask of {} voxels for a grid of {}", mask.size(), voxels));
  }
  mask_.write(device_.queue(), mask);
  sums_host_ = PinnedHost<float>(device, sums_.size());
  counts_host_ = PinnedHost<int>(device, counts_.size());
}

SliceMeans DeviceSliceMeans::measure(const DeviceBuffer<float>& volume) {
  enqueue(volume);
  RTF_CL_CHECK(clFinish(device_.queue()));
  return result();
}

void DeviceSliceMeans::enqueue(const DeviceBuffer<float>& volume) {
  const int64_t slice_voxels = dims_[0] * dims_[1];
  if (volume.size() < static_cast<size_t>(slice_voxels * dims_[2])) {
    throw std::invalid_argument(fmt::format("DeviceSliceMeans: a volume of {} floats for a grid of {}", volume.size(),
                                            slice_voxels * dims_[2]));
  }
  set_args(kernel_, volume, mask_, sums_, counts_, static_cast<int>(slice_voxels));
  launch<1>(device_.queue(), kernel_, {static_cast<size_t>(dims_[2]) * kLocalSize}, {size_t{kLocalSize}}, {},
            EventMode::kNone);
  sums_.read_async(device_.queue(), sums_host_.span());
  counts_.read_async(device_.queue(), counts_host_.span());
  enqueued_ = true;
}

SliceMeans DeviceSliceMeans::result() const {
  if (!enqueued_) throw std::logic_error("DeviceSliceMeans: result() before enqueue()");
  const std::span<const float> sums = sums_host_.span();
  const std::span<const int> counts = counts_host_.span();
  SliceMeans out;
  out.slice.resize(static_cast<size_t>(dims_[2]));
  double total = 0.0;
  int64_t total_count = 0;
  for (size_t z = 0; z < out.slice.size(); ++z) {
    double sum = 0.0;
    int64_t count = 0;
    for (size_t i = z * kLocalSize; i < (z + 1) * kLocalSize; ++i) {
      sum += sums[i];
      count += counts[i];
    }
    out.slice[z] = count > 0 ? sum / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
    total += sum;
    total_count += count;
  }
  out.global = total_count > 0 ? total / static_cast<double>(total_count) : std::numeric_limits<double>::quiet_NaN();
  return out;
}

}  // namespace rtf
