// rtfmri entry point: global options, subcommand dispatch, and error reporting.
// Any exception escaping a subcommand is printed as "rtfmri: error: ..." with exit code 1.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <exception>

#include "cli/command_support.hpp"
#include "core/scale/ranks.hpp"

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
  app.add_option(
         "--devices", globals.devices,
         "Several OpenCL devices for the offline commands (randomise, connectome, bedpost, glm --bayes, batch): "
         "all, gpu (every GPU), cpu, local-gpu (under mpirun/srun: one GPU per rank, by the rank's index on "
         "its host), or a comma list of those and PLATFORM:DEVICE; an entry ending in /N is split into N "
         "sub-devices (CPU devices). Under mpirun/srun each rank uses its own host's devices (docs/scale.md)")
      ->envname("RTFMRI_DEVICES");
  app.add_flag("-v,--verbose", globals.verbose, "Verbose logging");
  const rtf::Ranks& ranks = rtf::Ranks::world();
  app.parse_complete_callback([&] {
    // Ranks other than 0 report warnings and errors only (with -v everything), each line naming the rank.
    const bool quiet = !ranks.root() && !globals.verbose;
    spdlog::set_level(globals.verbose ? spdlog::level::debug : quiet ? spdlog::level::warn : spdlog::level::info);
    if (ranks.mpi()) spdlog::set_pattern(fmt::format("[%Y-%m-%d %H:%M:%S.%e] [rank {}] [%^%l%$] %v", ranks.rank()));
  });

  auto& registry = command_registry();
  std::sort(registry.begin(), registry.end(), [](const auto& a, const auto& b) { return a.order < b.order; });
  for (auto& entry : registry) entry.setup(app, globals);
  refuse_non_finite_numbers(app);  // no option means anything by nan or inf (cli/command_support.hpp)

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun/srun (built with MPI): one rank of a job. An error on any rank ends every rank (Ranks::abort), so
  // no rank waits forever on one that failed.
  rtf::Ranks::init(&argc, &argv);
  const rtf::Ranks& ranks = rtf::Ranks::world();
  int status = 1;
  try {
    status = run(argc, argv);
  } catch (const std::exception& e) {  // setup, parsing or a subcommand: report, never terminate
    if (ranks.mpi() && ranks.size() > 1) ranks.abort(e.what());
    std::fprintf(stderr, "rtfmri: error: %s\n", e.what());
  } catch (...) {
    if (ranks.mpi() && ranks.size() > 1) ranks.abort("unknown exception");
    std::fprintf(stderr, "rtfmri: error: unknown exception\n");
  }
  if (status != 0 && ranks.mpi() && ranks.size() > 1) ranks.abort(fmt::format("exit status {}", status));
  rtf::Ranks::finalize();
  return status;
}
