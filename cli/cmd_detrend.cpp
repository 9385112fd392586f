// `rtfmri detrend IN OUT`: removes Legendre polynomial and/or DCT high-pass trends from a 4D NIfTI
// series on the device (core/temporal/detrend.hpp; docs/algorithms/detrending.md).
#include <memory>

#include "cli/command_support.hpp"
#include "core/temporal/detrend_command.hpp"

namespace {

// The options as CLI11 fills them; those not given stay unset in the command's options.
struct DetrendCli {
  rtf::DetrendCommandOptions command;
  int poly_order = 0;
  double cutoff_s = 0.0;
  double tr_s = 0.0;
};

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto opts = std::make_shared<DetrendCli>();
  auto* cmd = app.add_subcommand("detrend", "Remove slow trends: Legendre polynomials and/or a DCT high-pass set");
  cmd->add_option("IN", opts->command.in, "Input 4D NIfTI")->required()->check(CLI::ExistingFile);
  cmd->add_option("OUT", opts->command.out, "Output NIfTI (float32)")->required();
  cmd->add_option("--poly", opts->poly_order, "Remove Legendre polynomials up to this order (0..10)");
  cmd->add_option("--highpass", opts->cutoff_s,
                  "Remove DCT components with periods longer than this many seconds (SPM convention, e.g. 128)");
  cmd->add_option("--tr", opts->tr_s, "Repetition time in seconds for --highpass (default: from the header)");
  cmd->add_flag("--remove-mean", opts->command.spec.remove_mean, "Also remove each voxel's mean (default: keep it)");
  cmd->callback([opts, cmd, &globals] {
    rtf::DetrendCommandOptions& o = opts->command;
    if (cmd->count("--poly") > 0) o.spec.poly_order = opts->poly_order;
    if (cmd->count("--highpass") > 0) o.spec.highpass_cutoff_s = opts->cutoff_s;
    if (cmd->count("--tr") > 0) o.tr_s = opts->tr_s;
    rtf::run_detrend_command(o, [&globals] { return rtf::cli::open_device(globals); });
  });
}

RTF_REGISTER_COMMAND(41, setup);

}  // namespace
