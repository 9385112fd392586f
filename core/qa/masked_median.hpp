// DeviceMaskedMedian: the median of a volume's finite values inside a mask, on the device (the masked values sorted by
// core/qa/masked_sort.hpp, then one work-item reads the middle of the finite ones: kernels/rank_correlation.cl,
// sorted_middle), so that only two floats and a count cross to the host. The live QA stage's tSNR medians; the same
// value as median_in_mask (core/qa/qa_outputs.hpp) on the host: the mean of the two middle values for an even count.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/device/pinned_host.hpp"

namespace rtf {

class DeviceMaskedSort;

class DeviceMaskedMedian {
 public:
  // `mask`: one byte per voxel (non-zero: inside). Throws std::invalid_argument for an empty mask.
  explicit DeviceMaskedMedian(Device& device, std::span<const uint8_t> mask, int merge_ways = 8);
  ~DeviceMaskedMedian();
  DeviceMaskedMedian(const DeviceMaskedMedian&) = delete;
  DeviceMaskedMedian& operator=(const DeviceMaskedMedian&) = delete;

  // Enqueues the median of `volume` (at least the mask's voxels) and its read; result() once the queue has finished.
  void enqueue(const DeviceBuffer<float>& volume);
  // NaN where no masked value is finite.
  double result() const;
  // enqueue(), a wait, result().
  double median(const DeviceBuffer<float>& volume);

 private:
  Device& device_;
  std::unique_ptr<DeviceMaskedSort> sort_;
  ClKernel middle_kernel_;
  DeviceBuffer<int> middle_;
  PinnedHost<int> middle_host_;
  bool pending_ = false;
};

}  // namespace rtf
