// RAII owners for OpenCL objects (context, queue, program, kernel, buffer, event).
// Move-only; the destructor releases and never throws.
#pragma once

#include <CL/cl.h>

#include <utility>

namespace rtf {

template <typename T, cl_int (*Release)(T), cl_int (*Retain)(T)>
class ClHandle {
 public:
  ClHandle() = default;
  explicit ClHandle(T handle) : handle_(handle) {}  // takes ownership
  ClHandle(const ClHandle& other) : handle_(other.handle_) {
    if (handle_) Retain(handle_);
  }
  ClHandle& operator=(const ClHandle& other) {
    if (this != &other) {
      reset();
      handle_ = other.handle_;
      if (handle_) Retain(handle_);
    }
    return *this;
  }
  ClHandle(ClHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  ClHandle& operator=(ClHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ~ClHandle() { reset(); }

  void reset() noexcept {
    if (handle_) Release(handle_);  // a failed release cannot be handled in a destructor
    handle_ = nullptr;
  }
  T get() const { return handle_; }
  T* out() {  // for APIs that write a new object into a T*
    reset();
    return &handle_;
  }
  explicit operator bool() const { return handle_ != nullptr; }

 private:
  T handle_ = nullptr;
};

using ClContext = ClHandle<cl_context, clReleaseContext, clRetainContext>;
using ClQueue = ClHandle<cl_command_queue, clReleaseCommandQueue, clRetainCommandQueue>;
using ClProgram = ClHandle<cl_program, clReleaseProgram, clRetainProgram>;
using ClKernel = ClHandle<cl_kernel, clReleaseKernel, clRetainKernel>;
using ClMem = ClHandle<cl_mem, clReleaseMemObject, clRetainMemObject>;
using ClEvent = ClHandle<cl_event, clReleaseEvent, clRetainEvent>;

}  // namespace rtf
