// ResultArena: one device buffer and its page-locked host mirror for the small results several measures of a stage
// write every TR, so that the stage reads them all with one command instead of one each (a command costs ~8-15 us on a
// GPU: rtfmri-bench_qa, per_command_ms; docs/device.md). A measure takes its result buffer from the arena as a
// sub-buffer (at the alignment the device asks for) with the host span it will find the values in, and leaves the
// read to the arena's owner: enqueue_read() once everything is enqueued, then a wait.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <span>
#include <stdexcept>

#include "core/device/buffer.hpp"
#include "core/device/cl_error.hpp"
#include "core/device/device.hpp"
#include "core/device/pinned_host.hpp"

namespace rtf {

class ResultArena {
 public:
  ResultArena(const Device& device, size_t capacity_bytes)
      : device_(device), buffer_(device, std::max<size_t>(capacity_bytes, 1)), host_(device, buffer_.size()) {
    cl_uint align_bits = 0;
    RTF_CL_CHECK(clGetDeviceInfo(device.id(), CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(align_bits), &align_bits, nullptr));
    align_ = std::max<size_t>(align_bits / 8, 64);
  }
  ResultArena(const ResultArena&) = delete;
  ResultArena& operator=(const ResultArena&) = delete;

  // `count` elements of T (>= 1) as a device buffer, and in `host` where the read puts them. Throws std::length_error
  // when the arena is full.
  template <typename T>
  DeviceBuffer<T> take(size_t count, std::span<T>& host) {
    const size_t offset = (used_ + align_ - 1) / align_ * align_;
    const size_t bytes = std::max<size_t>(count, 1) * sizeof(T);
    if (offset + bytes > buffer_.size()) {
      throw std::length_error(
          fmt::format("ResultArena: {} bytes at {} do not fit its {} bytes", bytes, offset, buffer_.size()));
    }
    const cl_buffer_region region{offset, bytes};
    ClMem sub(RTF_CL_CREATE(
        clCreateSubBuffer(buffer_.get(), CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &rtf_cl_err)));
    used_ = offset + bytes;
    host = std::span<T>(reinterpret_cast<T*>(host_.span().data() + offset), std::max<size_t>(count, 1));
    return DeviceBuffer<T>::adopt(std::move(sub), std::max<size_t>(count, 1));
  }

  // Enqueues one read of everything taken into the host mirror; nothing waits.
  void enqueue_read() const {
    if (used_ > 0) buffer_.read_async(device_.queue(), host_.span().first(used_));
  }
  size_t used_bytes() const { return used_; }
  // What an owner adds to its results' bytes per take when sizing an arena (alignments seen: NVIDIA 512 bytes, PoCL
  // 128; a device asking for more makes take() throw).
  static constexpr size_t kAlignmentSlack = 4096;

 private:
  const Device& device_;
  DeviceBuffer<std::byte> buffer_;
  mutable PinnedHost<std::byte> host_;
  size_t align_ = 64;
  size_t used_ = 0;
};

}  // namespace rtf
