// The header fields of one DICOM file that assembling a volume needs (issue 18), read with GDCM without decoding the
// pixels: identity (series, instance, modality, SOP class, transfer syntax), the plane's geometry for
// core/dicom/dicom_affine.hpp, timing, and a Siemens mosaic's CSA fields (NumberOfImagesInMosaic, SliceNormalVector,
// MosaicRefAcqTimes). A file that is not DICOM, or lacks a field, is a DicomError naming the file.
#pragma once

#include <array>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dicom/dicom_affine.hpp"
#include "scanner/dicom/dicom_file_check.hpp"

namespace gdcm {
class Reader;
}

namespace rtf::dicom {

class DicomError : public std::runtime_error {
 public:
  DicomError(const std::filesystem::path& file, const std::string& problem);
};

// A file that may still be growing: offer it again later.
class DicomIncomplete : public DicomError {
 public:
  using DicomError::DicomError;
};

struct DicomHeader {
  std::string sop_class_uid, sop_instance_uid, transfer_syntax_uid, modality, series_instance_uid, image_type;
  std::string acquisition_time;  // (0008,0032) as written, e.g. "101530.125000"
  int series_number = 0, instance_number = 0, acquisition_number = 0;
  int images_in_acquisition = 0;                           // (0020,1002), 0 where absent (GE: slices per volume)
  int temporal_position = 0;                               // TemporalPositionIdentifier (0020,0100), 0 where absent
  int number_of_temporal_positions = 0;                    // (0020,0105), 0 where absent
  int number_of_frames = 1;                                // (0028,0008): > 1 in enhanced multi-frame files
  int bits_allocated = 0, pixel_representation = 0;        // 0 unsigned, 1 signed
  DicomPlane plane;                                        // rows, columns, orientation, position, pixel spacing
  double slice_thickness = 0, spacing_between_slices = 0;  // mm, 0 where absent
  double repetition_time_ms = 0;
  // Siemens CSA image header (0029,1010), where present.
  int mosaic_slices = 0;                                  // NumberOfImagesInMosaic (0: not a mosaic)
  std::optional<std::array<double, 3>> csa_slice_normal;  // SliceNormalVector
  std::vector<double> mosaic_ref_acq_times_ms;            // MosaicRefAcqTimes, one per slice in stored order
  // GE's RTIA timer (0021,105E): seconds from the series' start to this slice's acquisition (where present).
  std::optional<double> ge_rtia_timer_s;
  bool is_mosaic() const { return mosaic_slices > 1 && image_type.find("MOSAIC") != std::string::npos; }
  // Enhanced (multi-frame) MR image storage: the geometry is per frame in functional groups, so `plane` is left empty
  // here (scanner/dicom/enhanced_frames.hpp reads it).
  bool is_enhanced() const { return sop_class_uid == kEnhancedMrImageStorage; }
  static constexpr const char* kEnhancedMrImageStorage = "1.2.840.10008.5.1.4.1.1.4.1";
};

// Throws DicomIncomplete for a file cut short (scanner/dicom/dicom_file_check.hpp: a console may still be writing it),
// DicomError for one that is not DICOM or is malformed. Every GDCM read goes through it first: Debian's GDCM aborts
// the process on an assertion for a file cut short. Returns the check (check_dicom_file's).
DicomFileCheck require_whole_dicom_file(const std::filesystem::path& path);

// GDCM's reader (its file name set) up to the pixel data, skipping over them: GDCM's ReadUpToTag(pixel data) alone
// reads their value too (3.9 GB of memory and 15 s for a file whose pixel data claim 3.75 GB). False where GDCM cannot
// read the file.
bool read_up_to_pixel_data(gdcm::Reader& reader);

// Throws DicomIncomplete / DicomError as require_whole_dicom_file, DicomError for a file that lacks Rows, Columns, or
// (other than an enhanced file) ImageOrientationPatient, ImagePositionPatient or PixelSpacing, and for a MOSAIC image
// without a usable CSA NumberOfImagesInMosaic (no CSA header, one that scanner/dicom/csa_check.hpp refuses — never
// handed to GDCM, which aborts on some —, or a count that is not a whole number >= 1).
DicomHeader read_dicom_header(const std::filesystem::path& path);

}  // namespace rtf::dicom
