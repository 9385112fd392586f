// Writing a volume as a scanner console exports it (issue 18, `rtfmri sim dicom`): a Siemens classic mosaic (one MR
// Image Storage file per volume, slices as tiles, the CSA image header (0029,1010) written by hand in the "SV10"
// format with NumberOfImagesInMosaic, SliceNormalVector and MosaicRefAcqTimes), or GE single slices (one file per
// slice, InstanceNumber = index * nz + slice + 1, ImagesInAcquisition = nz). The geometry is the inverse of
// core/dicom/dicom_affine.hpp, so that dcm2niix (and scanner/assemble/dicom_volume.hpp) read back the NIfTI's affine.
//
// Voxels are stored exactly as integers: Siemens as uint16 (int16 where a value is negative), GE as int16 (uint16 where
// a value exceeds 32767); no RescaleSlope/Intercept. A voxel that is not an integer in the int16 or uint16 range, an
// affine DICOM cannot hold (sheared: the slice axis not perpendicular to the rows and columns), or a series without a
// valid SeriesInstanceUID is a std::invalid_argument naming the problem.
//
// Slice order in GE files: a reader sorts single slices along the normal r x c of the rows and columns, so a NIfTI
// whose slice axis points against r x c (a positive affine determinant, e.g. RAS-stored data) comes back with its
// slices reversed and the matching affine (same voxels at the same places). Mosaics carry the slice direction in the
// CSA SliceNormalVector and come back as written either way.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/image/image.hpp"
#include "scanner/dicom/dicom_write_series.hpp"

namespace rtf::dicom {

// One Siemens mosaic for volume `index` (0-based; AcquisitionNumber and InstanceNumber index + 1) of `series`.
// `volume3d` is one volume (nt = 1) with the series' affine. Throws std::invalid_argument (see above) or
// std::runtime_error when the file cannot be written.
void write_mosaic_volume(const Image& volume3d, const DicomWriteSeries& series, int64_t index,
                         const std::filesystem::path& file);

// GE single-slice files of volume `index`: files[k] receives slice k (k = 0 .. nz - 1, NIfTI order); files.size()
// must be nz. Throws like write_mosaic_volume.
void write_slice_files(const Image& volume3d, const DicomWriteSeries& series, int64_t index,
                       const std::vector<std::filesystem::path>& files);

// Only slice `slice` of write_slice_files (to `file`), for a console that sends slices one at a time.
void write_slice_file(const Image& volume3d, const DicomWriteSeries& series, int64_t index, int64_t slice,
                      const std::filesystem::path& file);

// The CSA2 ("SV10") image header bytes holding NumberOfImagesInMosaic, SliceNormalVector and (when not empty)
// MosaicRefAcqTimes in ms, as Siemens writes them (items as text, each item's data padded to 4 bytes).
std::string siemens_csa_image_header(int mosaic_slices, const std::array<double, 3>& slice_normal,
                                     const std::vector<double>& mosaic_ref_acq_times_ms);

}  // namespace rtf::dicom
