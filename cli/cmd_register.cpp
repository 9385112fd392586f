// `rtfmri register MOVING FIXED --out PREFIX`: linear registration on the device (6, 9 or 12 degrees of freedom, NCC,
// MI or LNCC, coarse to fine); writes the ITK affine, the moving image resampled onto the fixed grid and a JSON report.
#include <memory>

#include "cli/command_support.hpp"
#include "core/registration/register_command.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<rtf::RegisterCommandOptions>();
  auto* cmd = app.add_subcommand(
      "register",
      "Linear registration of MOVING to FIXED on the device (any grids and orientations); writes PREFIX_affine.txt "
      "(ITK affine, fixed -> moving points, LPS), PREFIX_warped.nii.gz (MOVING on FIXED's grid) and "
      "PREFIX_register.json");
  cmd->add_option("MOVING", args->moving, "Image to move (3D NIfTI)")->required()->check(CLI::ExistingFile);
  cmd->add_option("FIXED", args->fixed, "Reference image (3D NIfTI): its grid is the output's")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", args->out, "Output prefix")->required();
  cmd->add_option("--dof", args->dof, "Degrees of freedom: 6 rigid, 9 rigid + scales, 12 affine")
      ->capture_default_str()
      ->check(CLI::IsMember({6, 9, 12}));
  cmd->add_option("--cost", args->cost,
                  "Cost: ncc (normalised cross-correlation: images of the same modality, e.g. T1 to a T1 template) or "
                  "mi (Mattes mutual information, 32 bins: different contrasts, e.g. EPI to T1) or lncc (local "
                  "correlation in Gaussian windows of --lncc-window sample steps: contrasts related linearly within a "
                  "window, of either sign; robust to a bias field). docs/algorithms/registration.md, \"Which cost\"")
      ->capture_default_str()
      ->check(CLI::IsMember({"ncc", "mi", "lncc"}));
  cmd->add_option("--lncc-window", args->lncc_window, "With --cost lncc: the window's FWHM in sample steps")
      ->capture_default_str()
      ->check(rtf::cli::positive());
  cmd->add_option("--fixed-mask", args->fixed_mask, "Mask on FIXED's grid: only its voxels drive the fit")
      ->check(CLI::ExistingFile);
  cmd->add_option("--init", args->init,
                  "Start: com (align the intensity centres of mass), identity, or an ITK affine file")
      ->capture_default_str();
  cmd->add_option("--levels", args->levels,
                  "Coarse to fine: SPACING_MM:FWHM_MM per level (sample spacing on FIXED, smoothing of both images)")
      ->capture_default_str();
  cmd->add_option("--max-iterations", args->max_iterations,
                  "Accepted steps per level (Levenberg-Marquardt for ncc, BFGS for mi and lncc)")
      ->capture_default_str()
      ->check(rtf::cli::positive());
  cmd->add_option("--interp", args->interp, "Interpolation of PREFIX_warped.nii.gz: linear, cubic or nearest")
      ->capture_default_str()
      ->check(CLI::IsMember({"linear", "cubic", "nearest"}));
  cmd->callback(
      [args, &globals] { rtf::run_register_command(*args, [&globals] { return rtf::cli::open_device(globals); }); });
}

RTF_REGISTER_COMMAND(45, setup);

}  // namespace
