// `rtfmri devices`: lists every OpenCL platform and device, marking the one that would be used, what --devices would
// use, and whether the build has MPI.
#include <fmt/format.h>

#include "cli/command_registry.hpp"
#include "core/device/device_info.hpp"
#include "core/scale/device_list.hpp"
#include "core/scale/ranks.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto* cmd = app.add_subcommand("devices", "List OpenCL platforms and devices (the selected one is marked *)");
  cmd->callback([&globals] {
    const auto devices = rtf::list_devices();
    if (devices.empty()) {
      fmt::print("No OpenCL devices found. Install an ICD (e.g. pocl-opencl-icd, or the GPU vendor's driver).\n");
      return;
    }
    std::string selected;
    try {
      selected = rtf::select_device(globals.device).label();
    } catch (const std::exception& e) {
      fmt::print(stderr, "warning: {}\n", e.what());
    }
    for (const auto& d : devices) {
      fmt::print("{} {}:{}  {}\n", d.label() == selected ? '*' : ' ', d.platform_index, d.device_index, d.device_name);
      fmt::print("      platform: {} ({})\n", d.platform_name, d.platform_version);
      fmt::print("      type: {}  compute units: {}  clock: {} MHz\n", d.type_name(), d.compute_units, d.clock_mhz);
      fmt::print("      memory: {:.1f} GiB global, {:.0f} KiB local, max allocation {:.1f} GiB\n",
                 static_cast<double>(d.global_mem_bytes) / (1ull << 30),
                 static_cast<double>(d.local_mem_bytes) / 1024.0,
                 static_cast<double>(d.max_alloc_bytes) / (1ull << 30));
      fmt::print("      driver: {}  ({})\n", d.driver_version, d.device_version);
    }
    if (!globals.devices.empty()) {
      fmt::print("--devices {}:\n", globals.devices);
      for (const auto& d : rtf::resolve_devices(globals.devices)) fmt::print("    {}\n", d.label());
    }
    fmt::print("MPI: {}\n", rtf::Ranks::built_with_mpi()
                                ? "built in (mpirun/srun spread the offline commands over ranks: docs/scale.md)"
                                : "not built in (no MPI found at build time; one process only)");
  });
}

RTF_REGISTER_COMMAND(10, setup);

}  // namespace
