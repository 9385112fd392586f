// Sum of a device float buffer: partial sums per work-group on the device, final sum in double on the host.
#pragma once

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"

namespace rtf {

class DeviceSum {
 public:
  explicit DeviceSum(Device& device, int groups = 64);
  // Sum of the first n elements of `in` (blocking).
  double sum(const DeviceBuffer<float>& in, size_t n);

 private:
  static constexpr int kLocalSize = 256;
  Device& device_;
  int groups_;
  ClKernel kernel_;
  DeviceBuffer<float> partial_;
};

}  // namespace rtf
