// `rtfmri apply`'s work: resamples a 3D or 4D image (or a label image, with nearest) onto a reference's grid through a
// chain of ITK affines and displacement fields, on the device, with progress and the time left on the log.
#pragma once

#include <string>
#include <vector>

#include "core/device/device_opener.hpp"

namespace rtf {

struct ApplyCommandOptions {
  std::string input;                    // NIfTI, 3D or 4D
  std::string reference;                // the image whose grid the output takes
  std::string out;                      // output NIfTI
  std::string interp = "linear";        // linear, cubic or nearest (labels: the datatype kept)
  std::vector<std::string> transforms;  // ITK affines ([FILE,1]: inverse) and displacement fields, REF's side first
  float default_value = 0.0f;           // where a point falls outside the input
};

// Reads the transforms and images, opens the device with `open_device`, resamples and writes the output.
void run_apply_command(const ApplyCommandOptions& options, const DeviceOpener& open_device);

}  // namespace rtf
