// The voxels of a mask as indices, on the host and as the index buffer the masked kernels gather through (the QA
// measures: core/qa/outlier_count, sorted_series, masked_sort, bucket_ranks).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"

namespace rtf {

// The indices of `mask`'s non-zero bytes, ascending.
std::vector<int> masked_voxels(std::span<const uint8_t> mask);

// `indices` in a device buffer of at least one element (an empty mask gets one unused element).
DeviceBuffer<int> upload_masked_voxels(const Device& device, std::span<const int> indices);

}  // namespace rtf
