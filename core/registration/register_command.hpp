// `rtfmri register`'s work: linear registration of MOVING to FIXED on the device (6, 9 or 12 degrees of freedom, NCC,
// MI or LNCC, coarse to fine, a progress line per level); writes the ITK affine, MOVING resampled onto FIXED's grid and
// a JSON report (docs/algorithms/registration.md).
#pragma once

#include <string>

#include "core/device/device_opener.hpp"
#include "core/registration/linear_registration.hpp"

namespace rtf {

struct RegisterCommandOptions {
  std::string moving, fixed;  // 3D NIfTIs
  std::string fixed_mask;     // "": none; else a mask on FIXED's grid (nonzero: drives the fit)
  std::string out;            // output prefix
  std::string init = "com";   // com, identity or an ITK affine file
  std::string levels = "8:8,4:4,2:2";
  std::string cost = "ncc";       // ncc, mi or lncc
  std::string interp = "linear";  // of PREFIX_warped.nii.gz: linear, cubic or nearest
  int dof = 12;
  int max_iterations = 40;
  double lncc_window = LinearRegistrationOptions{}.lncc_window_voxels;
};

// Reads the inputs, opens the device with `open_device`, registers, and writes PREFIX_affine.txt, _warped.nii.gz and
// _register.json as one set. Throws when the registration fails.
void run_register_command(const RegisterCommandOptions& options, const DeviceOpener& open_device);

}  // namespace rtf
