// `rtfmri mask`'s work: a brain mask from a BOLD series (smooth, threshold at a fraction of the mean), or with a
// template, the template's brain mask pulled into the subject by registration (for T1s with skull and EPIs).
#pragma once

#include <string>

#include "core/device/device_opener.hpp"
#include "core/mask/brain_mask.hpp"

namespace rtf {

struct MaskCommandOptions {
  std::string input;           // 3D or 4D NIfTI
  std::string output;          // mask NIfTI (uint8, 1 inside)
  std::string template_head;   // "": threshold; colin27 or a template head NIfTI: registration
  std::string template_brain;  // with a template path: its brain mask or brain-extracted image
  std::string cost = "mi";     // with a template: mi or ncc
  BrainMaskSpec spec;          // smoothing, fraction, volume
  bool use_mean = false;       // the temporal mean of all volumes instead of one volume
};

// Reads the input, opens the device with `open_device`, computes the mask and writes it.
void run_mask_command(const MaskCommandOptions& options, const DeviceOpener& open_device);

}  // namespace rtf
