// `rtfmri normalize T1 --template colin27|mni152|PATH --out PREFIX`: affine then non-linear registration of a T1 to a
// template on the device; writes the ITK affine, the forward and inverse displacement fields, the T1 on the template's
// grid, optionally the warp's Jacobian determinant, and a JSON report.
#include <memory>

#include "cli/command_support.hpp"
#include "core/registration/normalize_command.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<rtf::NormalizeCommandOptions>();
  auto* cmd = app.add_subcommand(
      "normalize",
      "Normalise a T1 to a template on the device: 12-dof affine (NCC), then a diffeomorphic non-linear warp "
      "(log-domain demons with a local-correlation force). Writes PREFIX_affine.txt (ITK affine, template -> T1 "
      "points), PREFIX_warp.nii.gz and PREFIX_inverse_warp.nii.gz (ITK displacement fields on the finest level's grid: "
      "the template's grid at that level's spacing), PREFIX_warped.nii.gz (the T1 on the template's grid) and "
      "PREFIX_normalize.json. "
      "docs/algorithms/normalization.md");
  cmd->add_option("T1", args->t1, "The subject's T1 (3D NIfTI; brain-extracted for a brain template)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--template", args->template_name,
                  "colin27 (Colin27's brain, Debian's mricron-data; the default), colin27-head (with skull), mni152 "
                  "(FSL's MNI152_T1_1mm_brain from $FSLDIR) or a NIfTI path")
      ->capture_default_str();
  cmd->add_option("--out,-o", args->out, "Output prefix")->required();
  cmd->add_option("--affine-levels", args->affine_levels, "Affine coarse to fine: SPACING_MM:FWHM_MM per level")
      ->capture_default_str();
  cmd->add_option("--levels", args->warp_levels,
                  "Non-linear coarse to fine: SPACING_MM:ITERATIONS[:FWHM_MM] per level (the template's voxels are "
                  "merged to the spacing; FWHM: smoothing of both images, default the spacing on merged levels)")
      ->capture_default_str();
  cmd->add_option("--force", args->force,
                  "Non-linear similarity: lncc (local correlation: robust to intensity differences) or demons "
                  "(squared difference after a global intensity match)")
      ->capture_default_str()
      ->check(CLI::IsMember({"lncc", "demons"}));
  cmd->add_option("--window", args->warp.window_fwhm_voxels, "LNCC window FWHM, in level voxels")
      ->capture_default_str()
      ->check(rtf::cli::positive());
  cmd->add_option("--fluid", args->warp.fluid_fwhm_voxels, "Smoothing of each update (FWHM, level voxels)")
      ->capture_default_str()
      ->check(rtf::cli::non_negative());
  cmd->add_option("--diffusion", args->warp.diffusion_fwhm_voxels,
                  "Smoothing of the velocity field after each update (FWHM, level voxels)")
      ->capture_default_str()
      ->check(rtf::cli::non_negative());
  cmd->add_option("--step", args->warp.step_voxels, "Largest update per iteration, in level voxels")
      ->capture_default_str()
      ->check(rtf::cli::positive());
  cmd->add_flag("--affine-only", args->affine_only, "Stop after the affine (no warp files)");
  cmd->add_flag("--jacobian", args->jacobian,
                "Also write PREFIX_jacobian.nii.gz: the warp's Jacobian determinant on the template's grid (its range "
                "and folded voxels are always in the report)");
  cmd->add_option("--interp", args->interp, "Interpolation of PREFIX_warped.nii.gz: linear or cubic")
      ->capture_default_str()
      ->check(CLI::IsMember({"linear", "cubic"}));
  cmd->callback(
      [args, &globals] { rtf::run_normalize_command(*args, [&globals] { return rtf::cli::open_device(globals); }); });
}

RTF_REGISTER_COMMAND(47, setup);

}  // namespace
