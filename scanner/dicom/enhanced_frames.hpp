// The frames of an enhanced (multi-frame) MR DICOM file (issue 18; SOP class 1.2.840.10008.5.1.4.1.1.4.1, as Siemens
// XA and Philips consoles export): each frame's geometry, position in the dimensions and time, read with GDCM from the
// Per-frame (5200,9230) functional groups, falling back to the Shared (5200,9229) ones. A file without a frame's
// geometry (ImagePositionPatient, ImageOrientationPatient, PixelSpacing) is a DicomError naming the file and frame.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/dicom/dicom_affine.hpp"
#include "scanner/dicom/dicom_header.hpp"

namespace rtf::dicom {

struct EnhancedFrame {
  DicomPlane plane;  // PlanePositionSequence, PlaneOrientationSequence, PixelMeasuresSequence; rows/columns of the file
  double slice_thickness = 0, spacing_between_slices = 0;  // PixelMeasuresSequence, mm, 0 where absent
  // FrameContentSequence (0020,9111); 0 / empty where absent.
  int temporal_position = 0;  // TemporalPositionIndex (1-based)
  std::string stack_id;
  int in_stack_position = 0;
  std::vector<int> dimension_index_values;
  std::string acquisition_datetime;          // FrameAcquisitionDateTime, else FrameReferenceDateTime, as written
  std::optional<double> acquisition_time_s;  // that DT as seconds since 1970-01-01 (its own time zone)
  double repetition_time_ms = 0;             // MRTimingAndRelatedParametersSequence, else the top-level (0018,0080)
  double rescale_slope = 1, rescale_intercept = 0;  // PixelValueTransformationSequence, else the top-level ones
};

struct EnhancedFrames {
  DicomHeader header;                 // the top-level fields (read_dicom_header)
  std::vector<EnhancedFrame> frames;  // in stored order: frame f is the f-th image of the pixel data
};

// Throws DicomError for a file that is not an enhanced MR image, whose functional groups do not give every frame its
// geometry, or whose per-frame group count differs from NumberOfFrames.
EnhancedFrames read_enhanced_frames(const std::filesystem::path& file);
// The same, with the file's header already read (read_dicom_header, which checked the file whole).
EnhancedFrames read_enhanced_frames(const std::filesystem::path& file, const DicomHeader& header);

// A DICOM DT value ("YYYYMMDDHHMMSS.FFFFFF", trailing components optional, a "+HHMM" offset ignored) as seconds since
// 1970-01-01 00:00 of its own clock; nullopt where it is not a date-time.
std::optional<double> dicom_datetime_seconds(const std::string& dt);

}  // namespace rtf::dicom
