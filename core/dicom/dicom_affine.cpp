// LPS columns from the orientation and spacing, the mosaic's origin correction, then LPS -> RAS and the row flip.
#include "core/dicom/dicom_affine.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace rtf::dicom {

namespace {

Eigen::Vector3d unit(double x, double y, double z) {
  return Eigen::Vector3d(x, y, z).normalized();
}

// Voxel (column i, DICOM row r, slice k) -> LPS mm: columns r_dir * column spacing, c_dir * row spacing, normal * dz.
Eigen::Matrix4d lps_affine(const DicomPlane& p, const Eigen::Vector3d& third_column) {
  const Eigen::Vector3d r = unit(p.orientation[0], p.orientation[1], p.orientation[2]);
  const Eigen::Vector3d c = unit(p.orientation[3], p.orientation[4], p.orientation[5]);
  Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
  m.block<3, 1>(0, 0) = r * p.pixel_spacing[1];
  m.block<3, 1>(0, 1) = c * p.pixel_spacing[0];
  m.block<3, 1>(0, 2) = third_column;
  m.block<3, 1>(0, 3) = Eigen::Vector3d(p.position[0], p.position[1], p.position[2]);
  return m;
}

// LPS -> RAS (x and y negated), then NIfTI row j = rows - 1 - DICOM row: the origin moves to the last row and the
// second column changes sign.
Eigen::Matrix4d nifti_from_lps(Eigen::Matrix4d m, int rows) {
  m.row(0) *= -1.0;  // directions and position alike
  m.row(1) *= -1.0;
  m.block<3, 1>(0, 3) += m.block<3, 1>(0, 1) * static_cast<double>(rows - 1);
  m.block<3, 1>(0, 1) *= -1.0;
  return m;
}

}  // namespace

std::array<double, 3> slice_normal(const DicomPlane& plane) {
  const Eigen::Vector3d r = unit(plane.orientation[0], plane.orientation[1], plane.orientation[2]);
  const Eigen::Vector3d c = unit(plane.orientation[3], plane.orientation[4], plane.orientation[5]);
  const Eigen::Vector3d n = r.cross(c).normalized();
  return {n(0), n(1), n(2)};
}

double slice_spacing(const std::array<double, 3>& first_position, const std::array<double, 3>& second_position) {
  return (Eigen::Vector3d(second_position[0], second_position[1], second_position[2]) -
          Eigen::Vector3d(first_position[0], first_position[1], first_position[2]))
      .norm();
}

Eigen::Matrix4d stack_affine(const DicomPlane& first, double spacing) {
  if (first.rows < 1 || first.columns < 1 || !(spacing > 0.0)) {
    throw std::invalid_argument(
        fmt::format("DICOM stack of {} x {} slices {} mm apart", first.rows, first.columns, spacing));
  }
  const std::array<double, 3> n = slice_normal(first);
  return nifti_from_lps(lps_affine(first, Eigen::Vector3d(n[0], n[1], n[2]) * spacing), first.rows);
}

int mosaic_tiles_per_side(int slices) {
  return static_cast<int>(std::ceil(std::sqrt(static_cast<double>(std::max(slices, 1)))));
}

Eigen::Matrix4d mosaic_affine(const DicomPlane& mosaic, int slices, double slice_spacing,
                              const std::array<double, 3>& csa_normal) {
  const int side = mosaic_tiles_per_side(slices);
  if (slices < 1 || mosaic.rows % side != 0 || mosaic.columns % side != 0) {
    throw std::invalid_argument(fmt::format("a mosaic of {} x {} does not hold {} x {} tiles for {} slices",
                                            mosaic.rows, mosaic.columns, side, side, slices));
  }
  const std::array<double, 3> n = slice_normal(mosaic);
  Eigen::Matrix4d m = lps_affine(mosaic, Eigen::Vector3d(n[0], n[1], n[2]) * slice_spacing);
  // The mosaic's ImagePositionPatient is its top-left corner; the first tile's is (size - tile) / 2 pixels further
  // along rows and columns (the mosaic is centred on the slice stack's field of view).
  const int tile_rows = mosaic.rows / side, tile_columns = mosaic.columns / side;
  m.block<3, 1>(0, 3) += m.block<3, 1>(0, 0) * ((mosaic.columns - tile_columns) / 2.0) +
                         m.block<3, 1>(0, 1) * ((mosaic.rows - tile_rows) / 2.0);
  if (Eigen::Vector3d(csa_normal[0], csa_normal[1], csa_normal[2]).dot(Eigen::Vector3d(n[0], n[1], n[2])) < 0.0) {
    m.block<3, 1>(0, 2) *= -1.0;
  }
  return nifti_from_lps(m, tile_rows);
}

}  // namespace rtf::dicom
