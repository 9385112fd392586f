// Uploading a large host array (a whole run: gigabytes) into a device buffer through page-locked staging buffers: the
// host copies each chunk into a pinned buffer on several threads while the device takes the chunk before it by DMA.
// From pageable memory the driver copies through its own staging on one thread (about 7 GB/s on an H100 host); this
// keeps both the copy and the transfer at memory speed. Small arrays are written directly.
#pragma once

#include <cstddef>
#include <span>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"

namespace rtf {

// Writes `bytes` bytes from `src` into `dst` at byte `offset` on device.queue(); returns when they are on the device.
void upload_pinned(const Device& device, cl_mem dst, size_t offset, const void* src, size_t bytes);

template <typename T>
void upload_pinned(const Device& device, DeviceBuffer<T>& dst, std::span<const T> src) {
  if (src.size() > dst.size()) {
    throw std::out_of_range(fmt::format("upload of {} elements into a buffer of {}", src.size(), dst.size()));
  }
  upload_pinned(device, dst.get(), 0, src.data(), src.size_bytes());
}

}  // namespace rtf
