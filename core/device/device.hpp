// Device: one OpenCL device with its context, a compute queue (profiling on) and a transfer queue,
// plus the program cache. Passed explicitly to whatever needs the device; never a singleton.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/device/cl_handle.hpp"
#include "core/device/device_info.hpp"
#include "core/device/program_cache.hpp"

namespace rtf {

class Device {
 public:
  explicit Device(const DeviceInfo& info);
  // Selects by spec (see select_device): "", "auto", "gpu", "cpu" or "P:D".
  static std::unique_ptr<Device> open(const std::string& spec);
  // Waits for both queues before releasing them (releasing a queue only flushes it): no queued work outlives the
  // context. Never throws. A Device that lives until the process's exit handlers (a function-local static) must be
  // finished before main() returns: work left to run during the exit handlers crashed PoCL (tests/support/
  // test_device.cpp, docs/device.md).
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceInfo& info() const { return info_; }
  cl_context context() const { return context_.get(); }
  cl_command_queue queue() const { return queue_.get(); }
  cl_command_queue transfer_queue() const { return transfer_queue_.get(); }
  cl_device_id id() const { return info_.device; }
  // Whether the device has cl_khr_fp64 (kernels then compute in double where they are written to).
  bool has_fp64() const;

  // A kernel from kernels/<file>, built with `defines` (each "NAME=VALUE" or "NAME") prepended as -D options.
  ClKernel kernel(std::string_view file, std::string_view kernel_name, const std::vector<std::string>& defines = {});
  ProgramCache& programs() { return *programs_; }

  void finish() const;  // waits for both queues

 private:
  DeviceInfo info_;
  ClContext context_;
  ClQueue queue_;
  ClQueue transfer_queue_;
  std::unique_ptr<ProgramCache> programs_;
};

}  // namespace rtf
