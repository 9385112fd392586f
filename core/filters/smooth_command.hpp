// `rtfmri smooth`'s work: 3D Gaussian smoothing of every volume of a 3D/4D NIfTI on the device, optionally as a
// normalised convolution inside a mask (core/filters/gaussian_smoothing.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "core/device/device_opener.hpp"

namespace rtf {

struct SmoothCommandOptions {
  std::string input, output;  // NIfTI in (3D or 4D), float32 NIfTI out
  std::string mask;           // "": none; else a mask on the same grid (0 outside)
  double fwhm_mm = 6.0;
  double truncate = 4.0;  // filter half-width in sigmas
  int64_t batch = 32;     // volumes per device launch
};

// Reads the input (and mask), opens the device with `open_device`, smooths and writes the output.
void run_smooth_command(const SmoothCommandOptions& options, const DeviceOpener& open_device);

}  // namespace rtf
