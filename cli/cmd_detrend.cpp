// `rtfmri detrend IN OUT`: removes Legendre polynomial and/or DCT high-pass trends from a 4D NIfTI
// series on the device (core/temporal/detrend.hpp; docs/algorithms/detrending.md).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <stdexcept>

#include "cli/cli_support.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/temporal/detrend.hpp"

namespace {

struct Options {
  std::string in, out;
  int poly_order = 0;
  double cutoff_s = 0.0;
  double tr_s = 0.0;
  bool remove_mean = false;
};

void run(const Options& o, const CLI::App& cmd, const rtf::cli::GlobalOptions& globals) {
  rtf::cli::Stopwatch clock;
  rtf::DetrendSpec spec;
  if (cmd.count("--poly") > 0) spec.poly_order = o.poly_order;
  if (cmd.count("--highpass") > 0) spec.highpass_cutoff_s = o.cutoff_s;
  spec.remove_mean = o.remove_mean;
  if (!spec.poly_order && !spec.highpass_cutoff_s) {
    throw std::invalid_argument("detrend: give --poly N, --highpass SECONDS, or both");
  }

  const rtf::Image image = rtf::read_nifti(o.in);
  const bool has_tr = cmd.count("--tr") > 0;
  const double tr_s = has_tr ? o.tr_s : image.header().tr_s;
  if (spec.highpass_cutoff_s && !has_tr && !(tr_s > 0.0)) {
    throw std::invalid_argument(fmt::format("detrend: {} has no TR in its header; give --tr SECONDS", o.in));
  }
  auto device = rtf::cli::open_device(globals);
  rtf::Detrender detrender(*device, image.header().voxels_per_volume(), image.nt(), tr_s, spec);
  rtf::Image result = detrender.detrend(image);
  if (tr_s > 0.0) result.header().tr_s = tr_s;
  rtf::io::OutputSet outputs;  // removed, not left half-written, on a failure or Ctrl-C
  rtf::write_nifti(outputs.add(o.out), result);
  outputs.commit();
  spdlog::info("detrended {} volume(s) of {}x{}x{} ({} basis functions, mean {}) -> {} ({:.2f} s)", image.nt(),
               image.nx(), image.ny(), image.nz(), detrender.design().cols(), spec.remove_mean ? "removed" : "kept",
               o.out, clock.seconds());
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("detrend", "Remove slow trends: Legendre polynomials and/or a DCT high-pass set");
  cmd->add_option("IN", opts->in, "Input 4D NIfTI")->required()->check(CLI::ExistingFile);
  cmd->add_option("OUT", opts->out, "Output NIfTI (float32)")->required();
  cmd->add_option("--poly", opts->poly_order, "Remove Legendre polynomials up to this order (0..10)");
  cmd->add_option("--highpass", opts->cutoff_s,
                  "Remove DCT components with periods longer than this many seconds (SPM convention, e.g. 128)");
  cmd->add_option("--tr", opts->tr_s, "Repetition time in seconds for --highpass (default: from the header)");
  cmd->add_flag("--remove-mean", opts->remove_mean, "Also remove each voxel's mean (default: keep it)");
  cmd->callback([opts, cmd, &globals] { run(*opts, *cmd, globals); });
}

RTF_REGISTER_COMMAND(41, setup);

}  // namespace
