// --devices: the spec's entries resolved against the OpenCL devices there are, sub-devices split off where asked.
#include "core/scale/device_list.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "core/device/cl_error.hpp"

namespace rtf {

namespace {

std::string available(const std::vector<DeviceInfo>& devices) {
  if (devices.empty()) return "no OpenCL device is installed";
  std::string s = "devices:";
  for (const DeviceInfo& d : devices) s += fmt::format(" [{} {}]", d.label(), d.type_name());
  return s;
}

// N sub-devices of `parent` with compute units as equal as possible (CL_DEVICE_PARTITION_BY_COUNTS).
std::vector<DeviceInfo> split(const DeviceInfo& parent, int parts) {
  if (parent.compute_units < static_cast<uint32_t>(parts)) {
    throw std::runtime_error(fmt::format("device {} has {} compute unit(s): it cannot be split into {}", parent.label(),
                                         parent.compute_units, parts));
  }
  std::vector<cl_device_partition_property> props{CL_DEVICE_PARTITION_BY_COUNTS};
  for (int k = 0; k < parts; ++k) {
    const uint32_t units = parent.compute_units / static_cast<uint32_t>(parts) +
                           (static_cast<uint32_t>(k) < parent.compute_units % static_cast<uint32_t>(parts) ? 1 : 0);
    props.push_back(static_cast<cl_device_partition_property>(units));
  }
  props.push_back(CL_DEVICE_PARTITION_BY_COUNTS_LIST_END);
  props.push_back(0);
  std::vector<cl_device_id> ids(static_cast<size_t>(parts));
  cl_uint made = 0;
  const cl_int status = clCreateSubDevices(parent.device, props.data(), static_cast<cl_uint>(parts), ids.data(), &made);
  if (status != CL_SUCCESS || made != static_cast<cl_uint>(parts)) {
    throw std::runtime_error(
        fmt::format("device {} cannot be split into {} sub-devices (OpenCL error {}): only "
                    "CPU devices such as PoCL's can be",
                    parent.label(), parts, status));
  }
  std::vector<DeviceInfo> result;
  for (int k = 0; k < parts; ++k) {
    DeviceInfo d = parent;
    d.device = ids[static_cast<size_t>(k)];
    cl_uint units = 0;
    RTF_CL_CHECK(clGetDeviceInfo(d.device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(units), &units, nullptr));
    d.compute_units = units;
    d.device_name = fmt::format("{} [part {} of {}, {} unit(s)]", parent.device_name, k + 1, parts, units);
    result.push_back(d);
  }
  return result;
}

// This process's index among the ranks on its host, as the launcher says (OpenMPI, Slurm, MPICH/Hydra); 0 alone.
int local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "PMI_LOCAL_RANK"}) {
    if (const char* value = std::getenv(name)) {
      const std::string_view text(value);
      int rank = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), rank);
      return error == std::errc() && end == text.data() + text.size() ? std::max(0, rank) : 0;
    }
  }
  return 0;
}

}  // namespace

std::vector<DeviceInfo> resolve_devices(const std::string& spec) {
  const std::vector<DeviceInfo> devices = list_devices();
  std::vector<DeviceInfo> chosen;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    std::string entry = spec.substr(start, comma - start);
    start = comma + 1;
    int parts = 1;
    if (const size_t slash = entry.find('/'); slash != std::string::npos) {
      const std::string count = entry.substr(slash + 1);
      const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), parts);
      if (ec != std::errc{} || end != count.data() + count.size() || parts < 1 || parts > 256) {
        throw std::invalid_argument(
            fmt::format("--devices '{}': '{}' after '/' is not a number of sub-devices (1..256)", spec, count));
      }
      entry.resize(slash);
    }
    if (entry.empty()) throw std::invalid_argument(fmt::format("--devices '{}': an empty entry", spec));
    std::vector<DeviceInfo> matched;
    const auto of_type = [&](cl_device_type type) {
      for (const DeviceInfo& d : devices) {
        if ((d.type & type) != 0) matched.push_back(d);
      }
    };
    if (entry == "all") {
      of_type(CL_DEVICE_TYPE_ALL);
    } else if (entry == "gpu") {
      of_type(CL_DEVICE_TYPE_GPU);
    } else if (entry == "cpu") {
      of_type(CL_DEVICE_TYPE_CPU);
    } else if (entry == "local-gpu") {  // one rank per GPU: the host's GPU number (local rank mod GPUs)
      of_type(CL_DEVICE_TYPE_GPU);
      if (!matched.empty()) matched = {matched[static_cast<size_t>(local_rank()) % matched.size()]};
    } else {
      matched.push_back(select_device(entry));  // "P:D": throws naming the devices there are
    }
    if (matched.empty()) {
      throw std::runtime_error(
          fmt::format("--devices '{}': no device matches '{}'; {}", spec, entry, available(devices)));
    }
    for (const DeviceInfo& d : matched) {
      if (parts == 1) {
        chosen.push_back(d);
      } else {
        for (const DeviceInfo& s : split(d, parts)) chosen.push_back(s);
      }
    }
    if (comma == spec.size()) break;
  }
  return chosen;
}

std::vector<std::unique_ptr<Device>> open_devices(const std::string& spec) {
  // One thread per device: a context on an NVIDIA GPU takes ~0.15 s, and opening 4 one after another took 0.45 s more
  // than one. The first error (in spec order) is rethrown once every thread has ended.
  const std::vector<DeviceInfo> infos = resolve_devices(spec);
  std::vector<std::unique_ptr<Device>> opened(infos.size());
  std::vector<std::exception_ptr> errors(infos.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < infos.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        opened[i] = std::make_unique<Device>(infos[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return opened;
}

}  // namespace rtf
