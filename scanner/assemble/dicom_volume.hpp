// One volume from DICOM files as dcm2niix would write it (issue 18): a Siemens classic mosaic (one file, its slices
// unpacked, core/dicom/mosaic_layout.hpp), or single-slice files of one volume (GE's one file per slice) stacked along
// the slice normal. The Image carries dcm2niix's affine (core/dicom/dicom_affine.hpp), the voxel size and the TR; the
// slice times (s from the volume's start, in slice order) come from the CSA MosaicRefAcqTimes where present.
#pragma once

#include <filesystem>
#include <vector>

#include "core/image/image.hpp"
#include "scanner/dicom/dicom_header.hpp"

namespace rtf::dicom {

struct DicomVolume {
  Image image;
  std::vector<double> slice_timing_s;  // empty where the files do not say
};

// The header of a volume built from DICOM: dims, dcm2niix's affine (voxel sizes from its columns), the TR, and the
// stored type (int16 for signed pixels, uint16 otherwise) as the source type.
ImageHeader dicom_volume_header(int nx, int ny, int nz, const Eigen::Matrix4d& affine, double tr_s, bool is_signed);

// Throws DicomError for a file that is not a Siemens mosaic or whose mosaic does not hold its slices.
DicomVolume mosaic_volume(const std::filesystem::path& file);
// The same, with the file's header already read (read_dicom_header).
DicomVolume mosaic_volume(const std::filesystem::path& file, const DicomHeader& header);

// Throws DicomError when the files disagree in size or orientation, or two share a position.
DicomVolume slice_stack_volume(const std::vector<std::filesystem::path>& files);

}  // namespace rtf::dicom
