// `rtfmri smooth IN OUT --fwhm MM [--mask M]`: 3D Gaussian smoothing of every volume on the device.
#include <memory>

#include "cli/command_support.hpp"
#include "core/filters/smooth_command.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<rtf::SmoothCommandOptions>();
  auto* cmd = app.add_subcommand("smooth", "3D Gaussian smoothing of a 3D/4D NIfTI (separable, on the device)");
  cmd->add_option("IN", args->input, "Input NIfTI (.nii/.nii.gz, 3D or 4D)")->required()->check(CLI::ExistingFile);
  cmd->add_option("OUT", args->output, "Output NIfTI (float32)")->required();
  cmd->add_option("--fwhm", args->fwhm_mm, "Full width at half maximum in mm (sigma = FWHM / 2.3548)")
      ->required()
      ->check(rtf::cli::non_negative());
  cmd->add_option("--mask", args->mask, "Mask NIfTI on the same grid: normalised convolution inside it, 0 outside")
      ->check(CLI::ExistingFile);
  cmd->add_option("--truncate", args->truncate, "Filter half-width in sigmas")
      ->capture_default_str()
      ->check(rtf::cli::positive());
  cmd->add_option("--batch", args->batch, "Volumes per device launch")
      ->capture_default_str()
      ->check(rtf::cli::positive());
  cmd->callback(
      [args, &globals] { rtf::run_smooth_command(*args, [&globals] { return rtf::cli::open_device(globals); }); });
}

RTF_REGISTER_COMMAND(30, setup);

}  // namespace
