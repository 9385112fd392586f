// `rtfmri slicetime`'s work: slice-timing correction of a 4D NIfTI series on the device, every slice resampled to a
// reference time (core/temporal/slice_timing.hpp; docs/algorithms/slice_timing.md).
#pragma once

#include <optional>
#include <string>

#include "core/device/device_opener.hpp"

namespace rtf {

struct SlicetimeCommandOptions {
  std::string in, out;                           // 4D NIfTI in, float32 NIfTI out
  std::optional<double> tr_s;                    // none: the header's
  std::optional<std::string> order;              // ascending, descending, interleaved or interleaved-siemens ...
  std::optional<std::string> slice_timing_file;  // ... or a BIDS sidecar / text file of slice times: exactly one
  std::optional<int> ref_slice;                  // none (and no ref_time_s): the slice acquired at position n/2
  std::optional<double> ref_time_s;
  std::string method = "sinc";  // sinc, cubic or linear
  int sinc_half_width = 8;
};

// Reads the series, opens the device with `open_device`, corrects it and writes the output. Throws
// std::invalid_argument when neither or both of order and slice_timing_file are given, or the TR is unknown.
void run_slicetime_command(const SlicetimeCommandOptions& options, const DeviceOpener& open_device);

}  // namespace rtf
