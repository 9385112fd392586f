// `rtfmri sim dicom`'s work: a 3D/4D NIfTI written into a folder as a scanner console exports DICOM, one volume per TR
// (or N times faster), with its slice times from the file, its BIDS sidecar or a named order; a line per volume on
// stdout. Ctrl-C stops after the file being written (sim/dicom/dicom_series_sim.hpp, docs/scanner.md).
#pragma once

#include <string>

#include "sim/dicom/dicom_series_sim.hpp"

namespace rtf::sim {

struct DicomCommandOptions {
  std::string file;                       // 3D or 4D NIfTI
  std::string vendor = "siemens-mosaic";  // siemens-mosaic, ge or enhanced
  std::string slice_order = "none";       // where the file has no slice times
  DicomSimOptions options;                // folder, TR, speed, series, start, count, atomic
};

// Writes the series. Throws std::invalid_argument (nothing written) when a volume to write is not exact integers in
// the int16/uint16 range.
void run_dicom_command(const DicomCommandOptions& options);

}  // namespace rtf::sim
