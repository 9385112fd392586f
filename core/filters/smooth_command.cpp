// `rtfmri smooth`'s work (core/filters/smooth_command.hpp).
#include "core/filters/smooth_command.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <span>

#include "core/filters/gaussian_smoothing.hpp"
#include "core/image/same_grid.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {

void run_smooth_command(const SmoothCommandOptions& args, const DeviceOpener& open_device) {
  Stopwatch clock;
  const Image image = read_nifti(args.input);
  std::vector<uint8_t> mask;
  if (!args.mask.empty()) {
    const Image mask_image = read_nifti(args.mask);
    require_same_grid(image.header(), args.input, mask_image.header(), args.mask);
    const auto v = mask_image.volume(0);
    mask.resize(v.size());
    std::transform(v.begin(), v.end(), mask.begin(), [](float x) { return x != 0.0f ? 1 : 0; });
  }
  auto device = open_device();
  const auto& h = image.header();
  const int64_t batch = std::min(args.batch, image.nt());
  std::optional<std::span<const uint8_t>> mask_span;
  if (!mask.empty()) mask_span = std::span<const uint8_t>(mask);
  GaussianSmoother smoother(*device, h.dims, h.voxel_mm, {.fwhm_mm = args.fwhm_mm, .truncate_sigmas = args.truncate},
                            mask_span, batch);
  const Image out = smoother.smooth(image);
  io::OutputSet outputs;  // removed, not left half-written, on a failure or Ctrl-C
  write_nifti(outputs.add(args.output), out);
  outputs.commit();
  spdlog::info("smoothed {} volume(s) of {}x{}x{} at FWHM {} mm{} -> {} ({:.2f} s)", image.nt(), h.dims[0], h.dims[1],
               h.dims[2], args.fwhm_mm, mask.empty() ? "" : " inside the mask", args.output, clock.seconds());
}

}  // namespace rtf
