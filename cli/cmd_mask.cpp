// `rtfmri mask IN OUT`: brain mask from a BOLD series (smooth, threshold at a fraction of the mean), or with
// `--template`, the template's brain mask pulled into the subject by registration (for T1s with skull and EPIs).
#include <memory>

#include "cli/command_support.hpp"
#include "core/mask/mask_command.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<rtf::MaskCommandOptions>();
  auto* cmd = app.add_subcommand(
      "mask", "Brain mask from a BOLD series: smooth one volume, keep voxels above a fraction of its mean");
  cmd->add_option("IN", args->input, "Input NIfTI (3D or 4D)")->required()->check(CLI::ExistingFile);
  cmd->add_option("OUT", args->output, "Output mask NIfTI (uint8, 1 inside)")->required();
  cmd->add_option("--fwhm", args->spec.fwhm_mm, "Smoothing FWHM in mm before thresholding")
      ->capture_default_str()
      ->check(rtf::cli::non_negative());
  cmd->add_option("--fraction", args->spec.fraction, "Threshold as a fraction of the smoothed volume's mean")
      ->capture_default_str()
      ->check(rtf::cli::positive());
  auto* volume = cmd->add_option("--volume", args->spec.volume, "Volume to build the mask from (0-based)")
                     ->capture_default_str()
                     ->check(rtf::cli::non_negative());
  cmd->add_flag("--mean", args->use_mean, "Build the mask from the temporal mean of all volumes")->excludes(volume);
  cmd->add_option("--template", args->template_head,
                  "Pull a template's brain mask into IN by registration (12 dof) instead of thresholding: colin27 "
                  "(Debian's mricron-data, with its brain ch2bet) or a template head NIfTI (then --template-brain)");
  cmd->add_option("--template-brain", args->template_brain,
                  "With --template PATH: the template's brain mask or brain-extracted image (nonzero = brain)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--cost", args->cost, "With --template: registration cost, mi (any contrast, e.g. EPI) or ncc (T1)")
      ->capture_default_str()
      ->check(CLI::IsMember({"mi", "ncc"}));
  cmd->callback(
      [args, &globals] { rtf::run_mask_command(*args, [&globals] { return rtf::cli::open_device(globals); }); });
}

RTF_REGISTER_COMMAND(60, setup);

}  // namespace
