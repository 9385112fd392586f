// `rtfmri mask IN OUT`: brain mask from a BOLD series (smooth, threshold at a fraction of the mean).
#include <spdlog/spdlog.h>

#include "cli/cli_support.hpp"
#include "core/io/nifti_io.hpp"
#include "core/mask/brain_mask.hpp"

namespace {

struct MaskArgs {
  std::string input, output;
  rtf::BrainMaskSpec spec;
  bool use_mean = false;
};

void run(const MaskArgs& args, const rtf::cli::GlobalOptions& globals) {
  rtf::cli::Stopwatch clock;
  const rtf::Image series = rtf::read_nifti(args.input);
  auto device = rtf::cli::open_device(globals);
  rtf::BrainMaskSpec spec = args.spec;
  if (args.use_mean) spec.volume = -1;
  const rtf::BrainMask mask = rtf::compute_brain_mask(*device, series, spec);
  rtf::ImageHeader h = series.header();
  h.num_volumes = 1;
  h.description = "rtfmri brain mask";
  rtf::Image out(h, std::vector<float>(mask.inside.begin(), mask.inside.end()));
  rtf::write_nifti(args.output, out, rtf::DataType::kUint8);
  const double percent = 100.0 * static_cast<double>(mask.count) / static_cast<double>(mask.inside.size());
  spdlog::info("mask: {} of {} voxels ({:.1f}%) above {:.4g} -> {} ({:.2f} s)", mask.count, mask.inside.size(), percent,
               mask.threshold, args.output, clock.seconds());
  if (mask.count == 0) spdlog::warn("the mask is empty: check the input or lower --fraction");
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<MaskArgs>();
  auto* cmd = app.add_subcommand(
      "mask", "Brain mask from a BOLD series: smooth one volume, keep voxels above a fraction of its mean");
  cmd->add_option("IN", args->input, "Input NIfTI (3D or 4D)")->required()->check(CLI::ExistingFile);
  cmd->add_option("OUT", args->output, "Output mask NIfTI (uint8, 1 inside)")->required();
  cmd->add_option("--fwhm", args->spec.fwhm_mm, "Smoothing FWHM in mm before thresholding")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--fraction", args->spec.fraction, "Threshold as a fraction of the smoothed volume's mean")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  auto* volume = cmd->add_option("--volume", args->spec.volume, "Volume to build the mask from (0-based)")
                     ->capture_default_str()
                     ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--mean", args->use_mean, "Build the mask from the temporal mean of all volumes")->excludes(volume);
  cmd->callback([args, &globals] { run(*args, globals); });
}

RTF_REGISTER_COMMAND(60, setup);

}  // namespace
