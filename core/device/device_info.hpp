// OpenCL platform/device discovery and the description `rtfmri devices` prints.
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rtf {

struct DeviceInfo {
  int platform_index = 0;
  int device_index = 0;
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  std::string platform_name;
  std::string platform_version;
  std::string device_name;
  std::string vendor;
  std::string driver_version;
  std::string device_version;  // "OpenCL 3.0 CUDA" etc.
  cl_device_type type = 0;
  uint64_t global_mem_bytes = 0;
  uint64_t local_mem_bytes = 0;
  uint64_t max_alloc_bytes = 0;
  uint32_t compute_units = 0;
  uint32_t clock_mhz = 0;
  size_t max_work_group_size = 0;

  bool is_gpu() const { return (type & CL_DEVICE_TYPE_GPU) != 0; }
  bool is_cpu() const { return (type & CL_DEVICE_TYPE_CPU) != 0; }
  std::string type_name() const;  // "GPU", "CPU", "ACCELERATOR", ...
  std::string label() const;      // "P:D device name (platform)"
};

// Every device of every platform. An ICD loader with no platforms yields an empty list.
std::vector<DeviceInfo> list_devices();

// Picks a device by spec: "" or "auto" (GPU first, else CPU, else anything), "gpu", "cpu",
// or "P:D" (platform and device indices as listed by list_devices()). Throws std::runtime_error
// naming the spec and the devices available when nothing matches.
DeviceInfo select_device(const std::string& spec);

}  // namespace rtf
