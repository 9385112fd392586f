// `rtfmri detrend`'s work: Legendre polynomial and/or DCT high-pass trends removed from a 4D NIfTI series on the device
// (core/temporal/detrend.hpp; docs/algorithms/detrending.md).
#pragma once

#include <optional>
#include <string>

#include "core/device/device_opener.hpp"
#include "core/temporal/detrend_basis.hpp"

namespace rtf {

struct DetrendCommandOptions {
  std::string in, out;         // 4D NIfTI in, float32 NIfTI out
  DetrendSpec spec;            // polynomial order and/or high-pass cutoff (at least one), the mean removed or kept
  std::optional<double> tr_s;  // none: the header's (needed for the high-pass)
};

// Reads the series, opens the device with `open_device`, detrends it and writes the output. Throws
// std::invalid_argument when no trend is asked for, or the high-pass has no TR.
void run_detrend_command(const DetrendCommandOptions& options, const DeviceOpener& open_device);

}  // namespace rtf
