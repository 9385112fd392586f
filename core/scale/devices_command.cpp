// `rtfmri devices`'s work (core/scale/devices_command.hpp).
#include "core/scale/devices_command.hpp"

#include <fmt/format.h>

#include "core/device/device_info.hpp"
#include "core/scale/device_list.hpp"
#include "core/scale/ranks.hpp"

namespace rtf {

void run_devices_command(const std::string& device_spec, const std::string& devices_spec) {
  const auto devices = list_devices();
  if (devices.empty()) {
    fmt::print("No OpenCL devices found. Install an ICD (e.g. pocl-opencl-icd, or the GPU vendor's driver).\n");
    return;
  }
  std::string selected;
  try {
    selected = select_device(device_spec).label();
  } catch (const std::exception& e) {
    fmt::print(stderr, "warning: {}\n", e.what());
  }
  for (const auto& d : devices) {
    fmt::print("{} {}:{}  {}\n", d.label() == selected ? '*' : ' ', d.platform_index, d.device_index, d.device_name);
    fmt::print("      platform: {} ({})\n", d.platform_name, d.platform_version);
    fmt::print("      type: {}  compute units: {}  clock: {} MHz\n", d.type_name(), d.compute_units, d.clock_mhz);
    fmt::print("      memory: {:.1f} GiB global, {:.0f} KiB local, max allocation {:.1f} GiB\n",
               static_cast<double>(d.global_mem_bytes) / (1ull << 30), static_cast<double>(d.local_mem_bytes) / 1024.0,
               static_cast<double>(d.max_alloc_bytes) / (1ull << 30));
    fmt::print("      driver: {}  ({})\n", d.driver_version, d.device_version);
  }
  if (!devices_spec.empty()) {
    fmt::print("--devices {}:\n", devices_spec);
    for (const auto& d : resolve_devices(devices_spec)) fmt::print("    {}\n", d.label());
  }
  fmt::print("MPI: {}\n", Ranks::built_with_mpi()
                              ? "built in (mpirun/srun spread the offline commands over ranks: docs/scale.md)"
                              : "not built in (no MPI found at build time; one process only)");
}

}  // namespace rtf
