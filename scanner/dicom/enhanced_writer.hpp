// One volume as an enhanced (multi-frame) MR DICOM file, as Siemens XA consoles export real-time fMRI (issue 18,
// `rtfmri sim dicom`): Enhanced MR Image Storage, explicit VR little endian, one frame per slice (k = 0 .. nz-1 in that
// order), the orientation, pixel measures, TR and rescale (identity) in the Shared functional groups, each frame's
// ImagePositionPatient and FrameContentSequence (StackID 1, InStackPositionNumber k + 1, TemporalPositionIndex index +
// 1, their DimensionIndexValues, FrameAcquisitionDateTime = the volume's start + series.slice_timing_s[k]) per frame.
// The geometry inverts dcm2niix's affine (core/dicom/dicom_affine.hpp), so reading the file back (or dcm2niix) gives
// the volume's voxels and affine; a volume whose third axis points against the row x column normal (a positive
// determinant in NIfTI's RAS) comes back with its slices reversed, as every DICOM stack does.
#pragma once

#include <cstdint>
#include <filesystem>

#include "core/image/image.hpp"
#include "scanner/dicom/dicom_write_series.hpp"

namespace rtf::dicom {

// Writes `file` (through a hidden temporary beside it, renamed at the end, so a watcher never sees half a file).
// Volume `index` (0-based) starts at 2000-01-01 08:00:00 + index * series.tr_s (a fixed nominal clock, so the output
// is reproducible). Voxels are stored exactly as uint16 (all in 0 .. 65535) or int16 (all in -32768 .. 32767; the
// volume's source_type picks where both fit). Throws DicomError naming the file for a 4D image, non-integer or
// out-of-range voxels, an affine DICOM cannot hold (columns not orthogonal, the third not along the slice normal),
// slice times that are not one per slice, an invalid series UID, or a failed write.
void write_enhanced_volume(const Image& volume3d, const DicomWriteSeries& series, int64_t index,
                           const std::filesystem::path& file);

// Several volumes in one file (as some consoles export a run): volumes.nt() temporal positions, volume t of it with
// TemporalPositionIndex first_index + t + 1 and its start at first_index + t TRs; the frames time-major (all slices of
// the first volume, then the next). Throws like write_enhanced_volume.
void write_enhanced_volumes(const Image& volumes, const DicomWriteSeries& series, int64_t first_index,
                            const std::filesystem::path& file);

}  // namespace rtf::dicom
