// upload_pinned: kStages pinned buffers of kChunk bytes (CL_MEM_ALLOC_HOST_PTR, mapped once), used in turn: before a
// stage is refilled, the write that last read it is waited for; each chunk is copied in by host threads, then its
// write enqueued without waiting. The stages are unmapped and released before returning.
#include "core/device/pinned_upload.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/device/cl_error.hpp"
#include "core/device/cl_handle.hpp"
#include "core/util/host_threads.hpp"

namespace rtf {
namespace {

constexpr size_t kChunk = size_t{64} << 20;
constexpr size_t kStages = 2;
constexpr size_t kCopyPart = size_t{8} << 20;  // bytes a copying thread takes at least

struct Stage {
  ClMem mem;
  void* host = nullptr;
  ClEvent written;  // the last write from this stage
};

}  // namespace

void upload_pinned(const Device& device, cl_mem dst, size_t offset, const void* src, size_t bytes) {
  const cl_command_queue q = device.queue();
  if (bytes < 2 * kChunk) {
    RTF_CL_CHECK(clEnqueueWriteBuffer(q, dst, CL_TRUE, offset, bytes, src, 0, nullptr, nullptr));
    return;
  }
  std::vector<Stage> stages(kStages);
  const auto unmap_all = [&]() noexcept {
    clFinish(q);  // no write may still read a stage
    for (Stage& s : stages) {
      if (s.host != nullptr) clEnqueueUnmapMemObject(q, s.mem.get(), s.host, 0, nullptr, nullptr);
      s.host = nullptr;
    }
    clFinish(q);
  };
  try {
    for (Stage& s : stages) {
      s.mem = ClMem(RTF_CL_CREATE(
          clCreateBuffer(device.context(), CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, kChunk, nullptr, &rtf_cl_err)));
      s.host = RTF_CL_CREATE(
          clEnqueueMapBuffer(q, s.mem.get(), CL_TRUE, CL_MAP_WRITE, 0, kChunk, 0, nullptr, nullptr, &rtf_cl_err));
    }
    const auto* in = static_cast<const std::byte*>(src);
    const size_t threads = std::min<size_t>(8, host_thread_count());
    for (size_t done = 0, i = 0; done < bytes; done += kChunk, ++i) {
      Stage& s = stages[i % kStages];
      const size_t n = std::min(kChunk, bytes - done);
      if (s.written.get() != nullptr) {
        const cl_event e = s.written.get();
        RTF_CL_CHECK(clWaitForEvents(1, &e));
      }
      host_ranges(n, std::min(threads, n / kCopyPart + 1), [&](size_t begin, size_t end, size_t) {
        std::memcpy(static_cast<std::byte*>(s.host) + begin, in + done + begin, end - begin);
      });
      cl_event e = nullptr;
      RTF_CL_CHECK(clEnqueueWriteBuffer(q, dst, CL_FALSE, offset + done, n, s.host, 0, nullptr, &e));
      s.written = ClEvent(e);
    }
  } catch (...) {
    unmap_all();
    throw;
  }
  unmap_all();
}

}  // namespace rtf
