// `rtfmri devices`: lists every OpenCL platform and device, marking the one that would be used, what --devices would
// use, and whether the build has MPI.
#include "cli/command_support.hpp"
#include "core/scale/devices_command.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto* cmd = app.add_subcommand("devices", "List OpenCL platforms and devices (the selected one is marked *)");
  cmd->callback([&globals] { rtf::run_devices_command(globals.device, globals.devices); });
}

RTF_REGISTER_COMMAND(10, setup);

}  // namespace
