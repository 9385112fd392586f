// `rtfmri mc`'s work: offline rigid motion correction of a 4D NIfTI with the live stage's kernels. Writes PREFIX.nii.gz
// (corrected), PREFIX.par (FSL order), PREFIX.1D (AFNI order) and PREFIX_fd.tsv (docs/algorithms/motion_correction.md).
#pragma once

#include <string>

#include "core/device/device_opener.hpp"

namespace rtf {

struct McCommandOptions {
  std::string in;                       // 4D NIfTI
  std::string out;                      // output prefix
  std::string ref = "0";                // a volume index of `in`, or a 3D NIfTI on the same grid
  std::string interpolation = "cubic";  // finest level and reslicing: cubic or linear
  bool no_intensity_model = false;      // no linear intensity field fitted alongside the motion
  double final_fwhm_mm = 6.0;           // smoothing of both images at the finest level (0: none)
};

// Reads the series and its reference, opens the device with `open_device`, registers every volume to the reference,
// writes the four files as one set and prints a summary line.
void run_mc_command(const McCommandOptions& options, const DeviceOpener& open_device);

}  // namespace rtf
