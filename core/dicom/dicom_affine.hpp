// The NIfTI affine of DICOM slices as dcm2niix writes it (issue 18; dcm2niix's nifti_dicom2mat and its mosaic and
// row-flip corrections, read for facts): DICOM's patient coordinates are LPS, NIfTI's RAS, and dcm2niix stores the
// image rows bottom-up (NIfTI j = Rows - 1 - DICOM row), so its affine maps NIfTI voxel (i, j, k) to RAS mm. Pure
// geometry, no DICOM parsing: the callers read ImageOrientationPatient, ImagePositionPatient, PixelSpacing and (for
// Siemens mosaics) the CSA header.
#pragma once

#include <Eigen/Core>
#include <array>

namespace rtf::dicom {

// One image plane's geometry from its DICOM header.
struct DicomPlane {
  std::array<double, 6> orientation{};    // ImageOrientationPatient: row direction (along a row), column direction
  std::array<double, 3> position{};       // ImagePositionPatient: centre of the first transmitted pixel, LPS mm
  std::array<double, 2> pixel_spacing{};  // PixelSpacing: between rows (along the column direction), between columns
  int rows = 0, columns = 0;
};

// The slice normal r x c of a plane (unit).
std::array<double, 3> slice_normal(const DicomPlane& plane);

// The spacing of a slice stack as dcm2niix takes it: the distance between the first two slices' ImagePositionPatient
// (not SpacingBetweenSlices, and not the mean over the stack: GE's positions are rounded to 1e-4 mm).
double slice_spacing(const std::array<double, 3>& first_position, const std::array<double, 3>& second_position);

// A stack of single-slice images sorted by their position along the normal r x c (ascending), from the first slice's
// plane and the slice spacing: the third column is the normal times the spacing.
Eigen::Matrix4d stack_affine(const DicomPlane& first, double spacing);

// Tiles per row and column of a Siemens mosaic holding `slices` images: ceil(sqrt(slices)).
int mosaic_tiles_per_side(int slices);

// A Siemens classic mosaic: `mosaic` is the whole mosaic file's plane (rows and columns of the mosaic), `slices` the
// CSA NumberOfImagesInMosaic, `slice_spacing` the slice spacing (mm), `csa_normal` the CSA SliceNormalVector. The
// origin moves from the mosaic's corner to the first tile's; where the CSA normal points against r x c the third column
// is negated. Throws std::invalid_argument where the mosaic's size is not a whole number of tiles.
Eigen::Matrix4d mosaic_affine(const DicomPlane& mosaic, int slices, double slice_spacing,
                              const std::array<double, 3>& csa_normal);

}  // namespace rtf::dicom
