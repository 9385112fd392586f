// rtfmri entry point: global options, subcommand dispatch, and error reporting.
// Any exception escaping a subcommand is printed as "rtfmri: error: ..." with exit code 1.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <exception>

#include "cli/command_registry.hpp"

namespace rtf::cli {
std::vector<CommandEntry>& command_registry() {
  static std::vector<CommandEntry> registry;
  return registry;
}
}  // namespace rtf::cli

namespace {

int run(int argc, char** argv) {
  using namespace rtf::cli;
  CLI::App app{"rtfmri: GPU-accelerated real-time fMRI (OpenCL). Docs: docs/ in the source tree."};
  app.set_version_flag("--version", "rtfmri 0.1.0");
  app.require_subcommand(1);
  GlobalOptions globals;
  app.add_option("--device", globals.device,
                 "OpenCL device: gpu, cpu, or PLATFORM:DEVICE indices (default: $RTFMRI_DEVICE, else GPU, else CPU)")
      ->envname("RTFMRI_DEVICE");
  app.add_flag("-v,--verbose", globals.verbose, "Verbose logging");
  app.parse_complete_callback([&] { spdlog::set_level(globals.verbose ? spdlog::level::debug : spdlog::level::info); });

  auto& registry = command_registry();
  std::sort(registry.begin(), registry.end(), [](const auto& a, const auto& b) { return a.order < b.order; });
  for (auto& entry : registry) entry.setup(app, globals);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // setup, parsing or a subcommand: report, never terminate
    std::fprintf(stderr, "rtfmri: error: %s\n", e.what());
    return 1;
  } catch (...) {
    std::fprintf(stderr, "rtfmri: error: unknown exception\n");
    return 1;
  }
}
