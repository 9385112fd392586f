// `rtfmri normalize`'s work: affine then non-linear registration of a T1 to a template on the device, with a progress
// line per level; writes the ITK affine, the forward and inverse displacement fields, the T1 on the template's grid,
// optionally the warp's Jacobian determinant, and a JSON report (docs/algorithms/normalization.md).
#pragma once

#include <string>

#include "core/device/device_opener.hpp"
#include "core/registration/normalization.hpp"

namespace rtf {

struct NormalizeCommandOptions {
  std::string t1;                         // the subject's T1 (3D NIfTI)
  std::string template_name = "colin27";  // colin27, colin27-head, mni152 or a NIfTI path (resolve_template)
  std::string out;                        // output prefix
  std::string affine_levels = "8:8,4:4,2:2";
  std::string warp_levels = format_nonlinear_levels(NonlinearOptions{}.levels);
  std::string force = "lncc";     // lncc or demons
  std::string interp = "linear";  // of PREFIX_warped.nii.gz: linear or cubic
  bool affine_only = false;
  bool jacobian = false;  // also write PREFIX_jacobian.nii.gz
  NonlinearOptions warp;  // window, fluid, diffusion, step (its levels come from warp_levels)
};

// Reads the inputs, opens the device with `open_device`, registers, and writes PREFIX_affine.txt, _warped.nii.gz,
// _normalize.json and (unless affine_only) _warp.nii.gz, _inverse_warp.nii.gz [, _jacobian.nii.gz] as one set.
void run_normalize_command(const NormalizeCommandOptions& options, const DeviceOpener& open_device);

}  // namespace rtf
