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

namespace rtf::dicom {

class DicomError : public std::runtime_error {
 public:
  DicomError(const std::filesystem::path& file, const std::string& problem);
};

struct DicomHeader {
  std::string sop_class_uid, transfer_syntax_uid, modality, series_instance_uid, image_type;
  int series_number = 0, instance_number = 0, acquisition_number = 0;
  int bits_allocated = 0, pixel_representation = 0;        // 0 unsigned, 1 signed
  DicomPlane plane;                                        // rows, columns, orientation, position, pixel spacing
  double slice_thickness = 0, spacing_between_slices = 0;  // mm, 0 where absent
  double repetition_time_ms = 0;
  // Siemens CSA image header (0029,1010), where present.
  int mosaic_slices = 0;                                  // NumberOfImagesInMosaic (0: not a mosaic)
  std::optional<std::array<double, 3>> csa_slice_normal;  // SliceNormalVector
  std::vector<double> mosaic_ref_acq_times_ms;            // MosaicRefAcqTimes, one per slice in stored order
  bool is_mosaic() const { return mosaic_slices > 1 && image_type.find("MOSAIC") != std::string::npos; }
};

// Throws DicomError for a file that is not DICOM or lacks Rows, Columns, ImageOrientationPatient,
// ImagePositionPatient or PixelSpacing.
DicomHeader read_dicom_header(const std::filesystem::path& path);

}  // namespace rtf::dicom
