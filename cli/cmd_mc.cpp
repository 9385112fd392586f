// `rtfmri mc IN.nii.gz --out PREFIX [--ref K|FILE]`: offline motion correction with the live stage's kernels.
// Writes PREFIX.nii.gz (corrected), PREFIX.par (FSL order), PREFIX.1D (AFNI order) and PREFIX_fd.tsv.
#include <memory>

#include "cli/command_support.hpp"
#include "core/motion/mc_command.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto o = std::make_shared<rtf::McCommandOptions>();
  auto* cmd = app.add_subcommand("mc", "Rigid motion correction of a 4D NIfTI (docs/algorithms/motion_correction.md)");
  cmd->add_option("IN", o->in, "4D NIfTI")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", o->out, "Output prefix: PREFIX.nii.gz, PREFIX.par, PREFIX.1D, PREFIX_fd.tsv")->required();
  cmd->add_option("--ref", o->ref, "Reference: a volume index of IN, or a 3D NIfTI on the same grid")
      ->capture_default_str();
  cmd->add_option("--interpolation", o->interpolation, "Finest-level sampling and reslicing")
      ->check(CLI::IsMember({"cubic", "linear"}))
      ->capture_default_str();
  cmd->add_option("--fwhm", o->final_fwhm_mm, "Smoothing (mm) of both images at the finest level (0: none)")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_flag("--no-intensity-model", o->no_intensity_model,
                "Do not fit a linear intensity field alongside the motion (faster; less robust to shading)");
  cmd->callback([o, &globals] { rtf::run_mc_command(*o, [&globals] { return rtf::cli::open_device(globals); }); });
}

RTF_REGISTER_COMMAND(65, setup);

}  // namespace
