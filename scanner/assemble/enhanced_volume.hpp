// Volumes from one enhanced (multi-frame) MR DICOM file as dcm2niix would write them (issue 18): the frames
// (scanner/dicom/enhanced_frames.hpp) grouped by TemporalPositionIndex (where no frame has one, the n-th frame at a
// position belongs to volume n), each volume's frames sorted along the slice normal and stacked with dcm2niix's affine
// (core/dicom/dicom_affine.hpp: the lowest frame's plane, the spacing between the first two), the voxels rescaled by
// each frame's PixelValueTransformation, the TR from MRTimingAndRelatedParameters, and the slice times (s from the
// volume's earliest frame, in slice order) from the frames' acquisition date-times where they differ.
#pragma once

#include <filesystem>
#include <vector>

#include "scanner/assemble/dicom_volume.hpp"
#include "scanner/dicom/dicom_header.hpp"

namespace rtf::dicom {

// In temporal order. Throws DicomError for a file that is not enhanced MR, lacks a frame's geometry, mixes stacks,
// sizes or orientations, puts two frames of a volume at one position, gives its volumes different slice counts, or
// whose pixel data is truncated or undecodable.
std::vector<DicomVolume> enhanced_volumes(const std::filesystem::path& file);
// The same, with the file's header already read (read_dicom_header).
std::vector<DicomVolume> enhanced_volumes(const std::filesystem::path& file, const DicomHeader& header);

}  // namespace rtf::dicom
