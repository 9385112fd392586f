// DeviceBuffer<T>: a typed, owned cl_mem of `size()` elements with blocking or event-returning
// copies. Sized once; hot paths reuse buffers instead of reallocating.
#pragma once

#include <fmt/format.h>

#include <span>
#include <stdexcept>
#include <vector>

#include "core/device/cl_error.hpp"
#include "core/device/cl_handle.hpp"
#include "core/device/device.hpp"
#include "core/device/kernel_trace.hpp"

namespace rtf {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const Device& device, size_t count, cl_mem_flags flags = CL_MEM_READ_WRITE) : count_(count) {
    if (count == 0) throw std::invalid_argument("DeviceBuffer of zero elements");
    const size_t bytes = count * sizeof(T);
    if (bytes > device.info().max_alloc_bytes) {
      throw std::runtime_error(fmt::format("buffer of {} bytes exceeds the device's max allocation of {} bytes", bytes,
                                           device.info().max_alloc_bytes));
    }
    mem_ = ClMem(RTF_CL_CREATE(clCreateBuffer(device.context(), flags, bytes, nullptr, &rtf_cl_err)));
  }

  // Takes `mem` (a buffer or sub-buffer of at least `count` elements) as it is.
  static DeviceBuffer adopt(ClMem mem, size_t count) {
    DeviceBuffer out;
    out.mem_ = std::move(mem);
    out.count_ = count;
    return out;
  }

  cl_mem get() const { return mem_.get(); }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

  void write(cl_command_queue q, std::span<const T> src, size_t offset = 0) {
    check_range(offset, src.size());
    RTF_CL_CHECK(clEnqueueWriteBuffer(q, mem_.get(), CL_TRUE, offset * sizeof(T), src.size_bytes(), src.data(), 0,
                                      nullptr, nullptr));
  }
  void read(cl_command_queue q, std::span<T> dst, size_t offset = 0) const { enqueue_read(q, dst, offset, true); }
  // Enqueues the read without waiting: `dst` must stay untouched until the queue has finished (clFinish).
  void read_async(cl_command_queue q, std::span<T> dst, size_t offset = 0) const {
    enqueue_read(q, dst, offset, false);
  }
  std::vector<T> read_all(cl_command_queue q) const {
    std::vector<T> out(count_);
    read(q, out);
    return out;
  }
  // Fills every element with `value` (used to poison outputs before a test run).
  void fill(cl_command_queue q, T value) {
    fill_async(q, value);
    RTF_CL_CHECK(clFinish(q));
  }
  // The same, in order on `q` without waiting.
  void fill_async(cl_command_queue q, T value) {
    RTF_CL_CHECK(clEnqueueFillBuffer(q, mem_.get(), &value, sizeof(T), 0, bytes(), 0, nullptr, nullptr));
  }

 private:
  void enqueue_read(cl_command_queue q, std::span<T> dst, size_t offset, bool blocking) const {
    check_range(offset, dst.size());
    cl_event event = nullptr;
    RTF_CL_CHECK(clEnqueueReadBuffer(q, mem_.get(), blocking ? CL_TRUE : CL_FALSE, offset * sizeof(T), dst.size_bytes(),
                                     dst.data(), 0, nullptr, kernel_trace_enabled() ? &event : nullptr));
    if (event == nullptr) return;
    kernel_trace_record(blocking ? "read (blocking)" : "read (no wait)", event);
    clReleaseEvent(event);
  }
  void check_range(size_t offset, size_t count) const {
    if (offset + count > count_) {
      throw std::out_of_range(fmt::format("copy of {} elements at {} exceeds buffer of {}", count, offset, count_));
    }
  }
  ClMem mem_;
  size_t count_ = 0;
};

}  // namespace rtf
