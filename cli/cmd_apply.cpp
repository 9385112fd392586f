// `rtfmri apply IMAGE --reference REF -t T1 [-t T2 ...] --out OUT`: resamples a 3D or 4D image (or a label image,
// with --interp nearest) onto REF's grid through a chain of ITK affines and displacement fields, on the device.
#include <spdlog/spdlog.h>

#include "cli/cli_support.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/registration/resample.hpp"
#include "core/registration/transform_files.hpp"

namespace {

struct ApplyArgs {
  std::string input, reference, out, interp = "linear";
  std::vector<std::string> transforms;
  float default_value = 0.0f;
};

void run(const ApplyArgs& args, const rtf::cli::GlobalOptions& globals) {
  rtf::cli::Stopwatch clock;
  std::vector<rtf::SpatialTransform> chain;
  for (const std::string& t : args.transforms) chain.push_back(rtf::read_transform_spec(t));
  const rtf::Image input = rtf::read_nifti(args.input);
  // Its voxels are not used, but a reference cut short is a file gone wrong: refused, never taken for its header.
  const rtf::ImageHeader reference = rtf::read_complete_nifti_header(args.reference);
  const auto interp = *rtf::parse_resample_interpolation(args.interp);
  auto device = rtf::cli::open_device(globals);
  // Progress with the time left, at most every 2 s (a long 4D run on a CPU device takes a while).
  rtf::cli::ProgressLog progress("volume", 2.0);
  const rtf::Image out =
      rtf::resample(*device, input, reference, chain, interp, args.default_value, std::ref(progress));
  // Nearest keeps the input's datatype (labels stay integers); interpolated values are float32.
  const rtf::DataType type =
      interp == rtf::ResampleInterpolation::kNearest ? input.header().source_type : rtf::DataType::kFloat32;
  rtf::io::OutputSet outputs;  // removed, not left half-written, on a failure or Ctrl-C
  rtf::write_nifti(outputs.add(args.out), out, type);
  outputs.commit();
  spdlog::info("resampled {} ({} volume(s)) onto {} ({}x{}x{}) through {} transform(s), {} -> {} ({:.2f} s)",
               args.input, input.nt(), args.reference, reference.dims[0], reference.dims[1], reference.dims[2],
               chain.size(), args.interp, args.out, clock.seconds());
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<ApplyArgs>();
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
  cmd->callback([args, &globals] { run(*args, globals); });
}

RTF_REGISTER_COMMAND(46, setup);

}  // namespace
