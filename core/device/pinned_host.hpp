// PinnedHost<T>: page-locked host memory (a CL_MEM_ALLOC_HOST_PTR buffer mapped once) as the destination of the small
// reads a stage makes every TR. A non-blocking read into it is a direct DMA: on an H100 a 4-byte read cost ~8 us a
// command into pinned memory and 20-45 us into pageable memory (rtfmri-bench_qa, per_command_ms; docs/device.md).
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <utility>

#include "core/device/cl_error.hpp"
#include "core/device/cl_handle.hpp"
#include "core/device/device.hpp"

namespace rtf {

template <typename T>
class PinnedHost {
 public:
  PinnedHost() = default;
  // `count` elements (at least one is allocated), zeroed; mapped on `device`'s compute queue.
  PinnedHost(const Device& device, size_t count) : queue_(device.queue()), count_(count) {
    const size_t bytes = std::max<size_t>(count, 1) * sizeof(T);
    mem_ = ClMem(RTF_CL_CREATE(
        clCreateBuffer(device.context(), CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, nullptr, &rtf_cl_err)));
    host_ = static_cast<T*>(RTF_CL_CREATE(clEnqueueMapBuffer(queue_, mem_.get(), CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                                             bytes, 0, nullptr, nullptr, &rtf_cl_err)));
    for (size_t i = 0; i < count_; ++i) host_[i] = T{};
  }
  ~PinnedHost() { release(); }
  PinnedHost(const PinnedHost&) = delete;
  PinnedHost& operator=(const PinnedHost&) = delete;
  PinnedHost(PinnedHost&& o) noexcept { *this = std::move(o); }
  PinnedHost& operator=(PinnedHost&& o) noexcept {
    if (this != &o) {
      release();
      queue_ = std::exchange(o.queue_, nullptr);
      mem_ = std::move(o.mem_);
      host_ = std::exchange(o.host_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }

  std::span<T> span() { return {host_, count_}; }
  std::span<const T> span() const { return {host_, count_}; }
  T& operator[](size_t i) { return host_[i]; }
  const T& operator[](size_t i) const { return host_[i]; }
  size_t size() const { return count_; }

 private:
  void release() noexcept {  // waits for the queue: no read may still be writing into the memory
    if (host_ != nullptr) {
      clEnqueueUnmapMemObject(queue_, mem_.get(), host_, 0, nullptr, nullptr);
      clFinish(queue_);
      host_ = nullptr;
    }
  }

  cl_command_queue queue_ = nullptr;
  ClMem mem_;
  T* host_ = nullptr;
  size_t count_ = 0;
};

}  // namespace rtf
