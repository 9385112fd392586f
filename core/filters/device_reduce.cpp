// DeviceSum: two-level reduction (device work-groups, then host double).
#include "core/filters/device_reduce.hpp"

#include <fmt/format.h>

#include <limits>
#include <stdexcept>

#include "core/device/launch.hpp"

namespace rtf {

DeviceSum::DeviceSum(Device& device, int groups)
    : device_(device),
      groups_(groups),
      kernel_(device.kernel("reduce_sum.cl", "reduce_sum", {fmt::format("LOCAL_SIZE={}", kLocalSize)})),
      partial_(device, static_cast<size_t>(groups)) {}

double DeviceSum::sum(const DeviceBuffer<float>& in, size_t n) {
  if (n > in.size() || n > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw std::invalid_argument(fmt::format("DeviceSum: {} elements of a buffer of {}", n, in.size()));
  }
  const int count = static_cast<int>(n);
  set_args(kernel_, in, partial_, count);
  launch<1>(device_.queue(), kernel_, {static_cast<size_t>(groups_) * kLocalSize}, {size_t{kLocalSize}});
  const auto partials = partial_.read_all(device_.queue());
  double total = 0.0;
  for (float p : partials) total += p;
  return total;
}

}  // namespace rtf
