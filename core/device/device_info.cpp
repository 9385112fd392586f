// OpenCL platform/device discovery and device selection by spec.
#include "core/device/device_info.hpp"

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>

#include "core/device/cl_error.hpp"

namespace rtf {
namespace {

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t size = 0;
  RTF_CL_CHECK(clGetPlatformInfo(p, what, 0, nullptr, &size));
  std::string s(size, '\0');
  RTF_CL_CHECK(clGetPlatformInfo(p, what, size, s.data(), nullptr));
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t size = 0;
  RTF_CL_CHECK(clGetDeviceInfo(d, what, 0, nullptr, &size));
  std::string s(size, '\0');
  RTF_CL_CHECK(clGetDeviceInfo(d, what, size, s.data(), nullptr));
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <typename T>
T device_value(cl_device_id d, cl_device_info what) {
  T value{};
  RTF_CL_CHECK(clGetDeviceInfo(d, what, sizeof(T), &value, nullptr));
  return value;
}

std::string describe(const std::vector<DeviceInfo>& devices) {
  if (devices.empty()) return "no OpenCL devices found (is an ICD such as pocl-opencl-icd installed?)";
  std::string s = "available devices:";
  for (const auto& d : devices) s += "\n  " + d.label() + " [" + d.type_name() + "]";
  return s;
}

}  // namespace

std::string DeviceInfo::type_name() const {
  if (type & CL_DEVICE_TYPE_GPU) return "GPU";
  if (type & CL_DEVICE_TYPE_CPU) return "CPU";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "ACCELERATOR";
  return "OTHER";
}

std::string DeviceInfo::label() const {
  return fmt::format("{}:{} {} ({})", platform_index, device_index, device_name, platform_name);
}

std::vector<DeviceInfo> list_devices() {
  cl_uint num_platforms = 0;
  const cl_int status = clGetPlatformIDs(0, nullptr, &num_platforms);
  if (status == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || num_platforms == 0) return {};
  RTF_CL_CHECK(status);
  std::vector<cl_platform_id> platforms(num_platforms);
  RTF_CL_CHECK(clGetPlatformIDs(num_platforms, platforms.data(), nullptr));

  std::vector<DeviceInfo> result;
  for (cl_uint p = 0; p < num_platforms; ++p) {
    cl_uint num_devices = 0;
    const cl_int dev_status = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &num_devices);
    if (dev_status == CL_DEVICE_NOT_FOUND || num_devices == 0) continue;
    RTF_CL_CHECK(dev_status);
    std::vector<cl_device_id> devices(num_devices);
    RTF_CL_CHECK(clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, num_devices, devices.data(), nullptr));
    for (cl_uint d = 0; d < num_devices; ++d) {
      DeviceInfo info;
      info.platform_index = static_cast<int>(p);
      info.device_index = static_cast<int>(d);
      info.platform = platforms[p];
      info.device = devices[d];
      info.platform_name = platform_string(platforms[p], CL_PLATFORM_NAME);
      info.platform_version = platform_string(platforms[p], CL_PLATFORM_VERSION);
      info.device_name = device_string(devices[d], CL_DEVICE_NAME);
      info.vendor = device_string(devices[d], CL_DEVICE_VENDOR);
      info.driver_version = device_string(devices[d], CL_DRIVER_VERSION);
      info.device_version = device_string(devices[d], CL_DEVICE_VERSION);
      info.type = device_value<cl_device_type>(devices[d], CL_DEVICE_TYPE);
      info.global_mem_bytes = device_value<cl_ulong>(devices[d], CL_DEVICE_GLOBAL_MEM_SIZE);
      info.local_mem_bytes = device_value<cl_ulong>(devices[d], CL_DEVICE_LOCAL_MEM_SIZE);
      info.max_alloc_bytes = device_value<cl_ulong>(devices[d], CL_DEVICE_MAX_MEM_ALLOC_SIZE);
      info.compute_units = device_value<cl_uint>(devices[d], CL_DEVICE_MAX_COMPUTE_UNITS);
      info.clock_mhz = device_value<cl_uint>(devices[d], CL_DEVICE_MAX_CLOCK_FREQUENCY);
      info.max_work_group_size = device_value<size_t>(devices[d], CL_DEVICE_MAX_WORK_GROUP_SIZE);
      result.push_back(std::move(info));
    }
  }
  return result;
}

DeviceInfo select_device(const std::string& spec) {
  const auto devices = list_devices();
  auto first_of = [&](cl_device_type type) -> const DeviceInfo* {
    for (const auto& d : devices)
      if (d.type & type) return &d;
    return nullptr;
  };
  const DeviceInfo* chosen = nullptr;
  if (spec.empty() || spec == "auto") {
    chosen = first_of(CL_DEVICE_TYPE_GPU);
    if (!chosen) chosen = first_of(CL_DEVICE_TYPE_CPU);
    if (!chosen && !devices.empty()) chosen = &devices.front();
  } else if (spec == "gpu") {
    chosen = first_of(CL_DEVICE_TYPE_GPU);
  } else if (spec == "cpu") {
    chosen = first_of(CL_DEVICE_TYPE_CPU);
  } else {
    const auto colon = spec.find(':');
    int p = -1, d = -1;
    const bool parsed = colon != std::string::npos &&
                        std::from_chars(spec.data(), spec.data() + colon, p).ec == std::errc{} &&
                        std::from_chars(spec.data() + colon + 1, spec.data() + spec.size(), d).ec == std::errc{};
    if (!parsed) {
      throw std::runtime_error(fmt::format("bad device spec '{}': use gpu, cpu, auto or PLATFORM:DEVICE", spec));
    }
    for (const auto& dev : devices)
      if (dev.platform_index == p && dev.device_index == d) chosen = &dev;
  }
  if (!chosen) throw std::runtime_error(fmt::format("no OpenCL device matches '{}'; {}", spec, describe(devices)));
  return *chosen;
}

}  // namespace rtf
