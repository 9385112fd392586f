// `rtfmri smooth IN OUT --fwhm MM [--mask M]`: 3D Gaussian smoothing of every volume on the device.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "cli/cli_support.hpp"
#include "cli/option_checks.hpp"
#include "core/filters/gaussian_smoothing.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"

namespace {

struct SmoothArgs {
  std::string input, output, mask;
  double fwhm_mm = 6.0;
  double truncate = 4.0;
  int64_t batch = 32;
};

void run(const SmoothArgs& args, const rtf::cli::GlobalOptions& globals) {
  rtf::cli::Stopwatch clock;
  const rtf::Image image = rtf::read_nifti(args.input);
  std::vector<uint8_t> mask;
  if (!args.mask.empty()) {
    const rtf::Image mask_image = rtf::read_nifti(args.mask);
    rtf::cli::require_same_grid(image.header(), args.input, mask_image.header(), args.mask);
    const auto v = mask_image.volume(0);
    mask.resize(v.size());
    std::transform(v.begin(), v.end(), mask.begin(), [](float x) { return x != 0.0f ? 1 : 0; });
  }
  auto device = rtf::cli::open_device(globals);
  const auto& h = image.header();
  const int64_t batch = std::min(args.batch, image.nt());
  std::optional<std::span<const uint8_t>> mask_span;
  if (!mask.empty()) mask_span = std::span<const uint8_t>(mask);
  rtf::GaussianSmoother smoother(*device, h.dims, h.voxel_mm,
                                 {.fwhm_mm = args.fwhm_mm, .truncate_sigmas = args.truncate}, mask_span, batch);
  const rtf::Image out = smoother.smooth(image);
  rtf::io::OutputSet outputs;  // removed, not left half-written, on a failure or Ctrl-C
  rtf::write_nifti(outputs.add(args.output), out);
  outputs.commit();
  spdlog::info("smoothed {} volume(s) of {}x{}x{} at FWHM {} mm{} -> {} ({:.2f} s)", image.nt(), h.dims[0], h.dims[1],
               h.dims[2], args.fwhm_mm, mask.empty() ? "" : " inside the mask", args.output, clock.seconds());
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<SmoothArgs>();
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
  cmd->callback([args, &globals] { run(*args, globals); });
}

RTF_REGISTER_COMMAND(30, setup);

}  // namespace
