// A scanner console exporting DICOM as it acquires (issue 18, `rtfmri sim dicom`): writes a 3D/4D NIfTI's volumes
// into a folder at TR pace (or N times faster; speed 0: as fast as possible), named as the vendor names them:
//   siemens-mosaic  OUT/001_SSSSSS_VVVVVV.dcm           one classic mosaic per volume (Siemens real-time export:
//                                                        series number S, volume V from 1)
//   ge              OUT/sS/iNNNNNNN.MRDC.N              one file per slice, N = InstanceNumber = index * nz + k + 1
//   enhanced        OUT/001_SSSSSS_VVVVVV.dcm           one enhanced multi-frame file per volume (where the build has
//                                                        scanner/dicom/enhanced_writer.hpp; otherwise refused)
// Volume i (counted from --start) appears (i + 1) TRs after the start, as a console exports a volume once acquired.
// By default each file is written in place (created, written, closed, as a console does: a watcher may see it grow);
// atomic: written under a hidden name (".NAME.tmp") in the same folder, then renamed, so a complete name only ever
// holds a complete file. `stop` is polled while waiting and between volumes: a stop finishes the file being written
// (and, for GE, the volume's remaining slices), so no file is left half-written either way; only a hard kill during a
// write can leave one (in place: a truncated file under its final name; atomic: a hidden .tmp file).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/image/image.hpp"

namespace rtf::sim {

enum class DicomVendor { kSiemensMosaic, kGe, kEnhanced };

// Throws std::invalid_argument for a name other than siemens-mosaic, ge or enhanced.
DicomVendor parse_dicom_vendor(std::string_view name);
std::string_view to_string(DicomVendor vendor);

// True where this build can write enhanced multi-frame files (scanner/dicom/enhanced_writer.hpp exists).
bool enhanced_dicom_available();

// The files of output volume `index` (0-based), relative to the output folder, in slice order for GE.
std::vector<std::filesystem::path> dicom_file_names(DicomVendor vendor, int series_number, int64_t index, int64_t nz);

struct DicomSimVolume {
  int64_t index = 0, total = 0;  // output index (0-based) and the number of volumes to write
  double seconds = 0;            // since the start
  std::vector<std::filesystem::path> files;
};

struct DicomSimOptions {
  std::filesystem::path out;
  DicomVendor vendor = DicomVendor::kSiemensMosaic;
  double tr_s = 0.0;   // 0: the image's TR, which must then be positive
  double speed = 1.0;  // N times real time; 0: no waiting
  int series_number = 1;
  std::string series_instance_uid;  // empty: a fresh 2.25 UUID-derived UID
  bool atomic = false;
  int64_t start = 0;                   // first volume of the image to write; it becomes output volume 0
  int64_t count = -1;                  // volumes to write; -1: to the end
  std::vector<double> slice_timing_s;  // one per slice, seconds; empty: none written
  std::function<bool()> stop;          // polled; true stops cleanly (see above)
  std::function<void(const DicomSimVolume&)> on_volume;  // after each volume's files are complete
};

struct DicomSimReport {
  int64_t volumes = 0, files = 0;
  bool stopped = false;  // `stop` ended the run before the last volume
  double seconds = 0;
  std::string series_instance_uid;
};

// Throws std::invalid_argument for unusable options or an image the writers refuse (non-integer voxels, a sheared
// affine), std::runtime_error when a file cannot be written (a temporary file is removed first).
DicomSimReport simulate_dicom_series(const Image& image, const DicomSimOptions& options);

}  // namespace rtf::sim
