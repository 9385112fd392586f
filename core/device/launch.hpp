// Kernel argument binding and NDRange launches. set_args(kernel, a, b, ...) binds in order;
// DeviceBuffer arguments bind their cl_mem. launch() rounds the global size up to a multiple of
// the local size (kernels bounds-check) and returns the kernel's event.
#pragma once

#include <array>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/cl_error.hpp"
#include "core/device/cl_handle.hpp"
#include "core/device/kernel_trace.hpp"

namespace rtf {

struct LocalMemory {  // a __local argument of `bytes` bytes
  size_t bytes;
};

namespace detail {
template <typename T>
void set_arg(cl_kernel k, cl_uint index, const DeviceBuffer<T>& buffer) {
  cl_mem mem = buffer.get();
  RTF_CL_CHECK(clSetKernelArg(k, index, sizeof(cl_mem), &mem));
}
inline void set_arg(cl_kernel k, cl_uint index, LocalMemory local) {
  RTF_CL_CHECK(clSetKernelArg(k, index, local.bytes, nullptr));
}
template <typename T>
requires std::is_trivially_copyable_v<T>
void set_arg(cl_kernel k, cl_uint index, const T& value) {
  RTF_CL_CHECK(clSetKernelArg(k, index, sizeof(T), &value));
}
}  // namespace detail

template <typename... Args>
void set_args(const ClKernel& kernel, const Args&... args) {
  cl_uint index = 0;
  (detail::set_arg(kernel.get(), index++, args), ...);
}

inline size_t round_up(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

enum class EventMode { kReturn, kNone };  // kNone skips creating an event (less driver overhead)

template <size_t N>
ClEvent launch(cl_command_queue q, const ClKernel& kernel, std::array<size_t, N> global, std::array<size_t, N> local,
               const std::vector<cl_event>& wait = {}, EventMode mode = EventMode::kReturn) {
  for (size_t i = 0; i < N; ++i) global[i] = round_up(global[i], local[i]);
  ClEvent event;
  const bool traced = kernel_trace_enabled();
  RTF_CL_CHECK(clEnqueueNDRangeKernel(q, kernel.get(), static_cast<cl_uint>(N), nullptr, global.data(), local.data(),
                                      static_cast<cl_uint>(wait.size()), wait.empty() ? nullptr : wait.data(),
                                      mode == EventMode::kReturn || traced ? event.out() : nullptr));
  if (traced) kernel_trace_record(kernel.get(), event.get());
  return event;
}

// Kernel execution time in milliseconds from a profiled event (the queue must have profiling on).
inline double event_milliseconds(const ClEvent& event) {
  cl_ulong start = 0, end = 0;
  cl_event raw = event.get();
  RTF_CL_CHECK(clWaitForEvents(1, &raw));
  RTF_CL_CHECK(clGetEventProfilingInfo(event.get(), CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr));
  RTF_CL_CHECK(clGetEventProfilingInfo(event.get(), CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr));
  return static_cast<double>(end - start) * 1e-6;
}

}  // namespace rtf
