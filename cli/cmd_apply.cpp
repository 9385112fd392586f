// `rtfmri apply IMAGE --reference REF -t T1 [-t T2 ...] --out OUT`: resamples a 3D or 4D image (or a label image,
// with --interp nearest) onto REF's grid through a chain of ITK affines and displacement fields, on the device.
#include <memory>

#include "cli/command_support.hpp"
#include "core/registration/apply_command.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<rtf::ApplyCommandOptions>();
  auto* cmd = app.add_subcommand(
      "apply",
      "Resample IMAGE (3D, 4D or labels) onto REF's grid through transforms, on the device. Transforms map points of "
      "REF's space to IMAGE's (as ITK's and ANTs' do): a point of REF goes through the first -t first, then the next, "
      "as antsApplyTransforms orders them");
  cmd->add_option("IMAGE", args->input, "Image to resample (NIfTI, 3D or 4D)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--reference,-r", args->reference, "Image whose grid the output takes")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--transform,-t", args->transforms,
                  "ITK affine text file (rtfmri register's PREFIX_affine.txt, ANTs/ITK .txt; [FILE,1] uses its "
                  "inverse) or ITK displacement field (.nii/.nii.gz, LPS vectors, intent 1007). Repeat for a chain; "
                  "none: identity (world coordinates only)")
      ->allow_extra_args(false);  // one file per -t, and "[FILE,1]" stays one argument
  cmd->add_option("--interp,-n", args->interp,
                  "linear, cubic (Keys) or nearest (for label images: values are never blended, the datatype is kept)")
      ->capture_default_str()
      ->check(CLI::IsMember({"linear", "cubic", "nearest"}));
  cmd->add_option("--default-value", args->default_value, "Value where the point falls outside IMAGE")
      ->capture_default_str();
  cmd->add_option("--out,-o", args->out, "Output NIfTI")->required();
  cmd->callback(
      [args, &globals] { rtf::run_apply_command(*args, [&globals] { return rtf::cli::open_device(globals); }); });
}

RTF_REGISTER_COMMAND(46, setup);

}  // namespace
