// What the subcommands (cli/cmd_*.cpp) share, the one support file of cli/: the command registry and the global
// options; opening the chosen device; existence checks made on rank 0; numeric option checks with readable messages;
// the live pipeline's flags (run, replay); and the Markdown command reference (`rtfmri help --markdown`, docs/cli.md).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device/device.hpp"
#include "stream/pipeline/pipeline_config.hpp"

// ---- The command registry ----
// Registry of rtfmri subcommands. Each cli/cmd_*.cpp registers one subcommand with
// RTF_REGISTER_COMMAND(order, setup_fn); setup_fn adds a CLI11 subcommand and its callback.
namespace rtf::cli {

struct GlobalOptions {
  std::string device;   // --device: gpu, cpu, or P:D (else RTFMRI_DEVICE, else auto)
  std::string devices;  // --devices: several devices (core/scale/device_list.hpp); empty: --device alone
  bool verbose = false;
};

using CommandSetup = std::function<void(CLI::App& app, GlobalOptions& globals)>;

struct CommandEntry {
  int order;  // position in --help
  CommandSetup setup;
};

std::vector<CommandEntry>& command_registry();

struct CommandRegistrar {
  CommandRegistrar(int order, CommandSetup setup) { command_registry().push_back({order, std::move(setup)}); }
};

}  // namespace rtf::cli

#define RTF_CLI_CONCAT_INNER(a, b) a##b
#define RTF_CLI_CONCAT(a, b) RTF_CLI_CONCAT_INNER(a, b)
#define RTF_REGISTER_COMMAND(order, fn) \
  static const ::rtf::cli::CommandRegistrar RTF_CLI_CONCAT(rtf_command_registrar_, __LINE__)(order, fn)

// ---- Devices and rank-0 checks ----
namespace rtf::cli {

// Opens the device chosen by --device / $RTFMRI_DEVICE (else GPU, else CPU) and logs which one.
std::unique_ptr<Device> open_device(const GlobalOptions& globals);

// CLI11's existence checks made on rank 0 alone under mpirun/srun: the other ranks read rank 0's inputs through
// Ranks::local_input and need not see the paths (hosts without a shared file system).
CLI::Validator existing_file_on_rank_zero();
CLI::Validator existing_directory_on_rank_zero();

// The `rtfmri sim` group (created on first use), to which `sim replay` and `sim phantom` add themselves.
CLI::App& sim_group(CLI::App& app);

}  // namespace rtf::cli

// ---- Numeric option checks ----
// Checks of numeric options with messages a user can read. CLI11's PositiveNumber and NonNegativeNumber
// answer "Value 0 not in range 0.000000 to 1797...", a 309-digit DBL_MAX, and CLI11's ranges let "nan" through
// (a NaN compares false with both bounds): a NaN threshold then silently meant "not asked for". These say what the
// option needs and what it got, and refuse nan and inf:
//   --fwhm: must be a number > 0 (got 0)
//   -c: must be a finite number (got nan)
namespace rtf::cli {

// A finite number > 0; `what` names it in the message ("a cluster-forming threshold must be > 0 (got 0)").
CLI::Validator positive(const std::string& what = "");
CLI::Validator non_negative();  // a finite number >= 0
// A finite number >= `least`, described as `what` ("the number of permutations must be at least 1 (got 0)").
CLI::Validator at_least(double least, const std::string& what);

// Adds a check refusing nan and inf (and text that is not a number) to every floating-point option of `app` and its
// subcommands, at any depth; call it once all of them are declared. No option of rtfmri means anything by nan or inf.
void refuse_non_finite_numbers(CLI::App& app);

}  // namespace rtf::cli

// ---- The live pipeline's flags ----
// The live pipeline's command-line flags, shared by `rtfmri run` and `rtfmri replay`: --config FILE and the flags
// that override it (run shape, stages, outputs). add_pipeline_flags registers them; pipeline_config_from builds the
// effective configuration: the file's, then each flag that was given.
namespace rtf::cli {

struct PipelineFlags {
  std::string config_file;
  stream::PipelineConfig values;  // the flags' values (applied only where given)
  std::string feedback_roi;       // "x,y,z[,radius]"
  std::string roi_space;          // of --feedback-roi: template | epi ("": the default, RoiSpace::kAuto)
  bool no_warp = false;           // --registration-affine-only
  bool no_motion = false;
  bool no_qa = false;
  std::string qa_fd_filter;  // --qa-fd-filter
  bool no_outputs = false;
};

void add_pipeline_flags(CLI::App& cmd, PipelineFlags& flags);

// The configuration, with windows longer than the ring shortened (with a warning) and the data directory found
// (for the AAL atlas). Throws std::invalid_argument for a malformed flag or config file.
stream::PipelineConfig pipeline_config_from(const PipelineFlags& flags, const CLI::App& cmd);

}  // namespace rtf::cli

// ---- The command reference ----
// The command-line reference, generated from the CLI11 declarations themselves (as MRtrix3 generates its command
// reference from each command's usage()): `rtfmri help --markdown` prints it, and docs/cli.md is that output,
// checked against the binary by scripts/check_cli_docs.sh.
namespace rtf::cli {

// Markdown: the program's description and global options, a table of contents, then every subcommand at any depth (in
// --help's order) with its description, usage line, arguments and options: names, value type with its checks,
// default, help text, and whether it is required, repeatable, read from the environment or excludes others.
std::string cli_reference_markdown(const CLI::App& app);

}  // namespace rtf::cli
