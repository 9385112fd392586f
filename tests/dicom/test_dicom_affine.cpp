// dcm2niix's affines (core/dicom/dicom_affine.hpp) against dcm2niix itself: the headers of pyneal's real Siemens
// mosaic and GE slice series (scanner/ of the extra data, values read from the files) give the sform that Debian's
// dcm2niix v1.0.20220720 wrote for them, within 1e-4 mm (dcm2niix stores float32). Plus the geometry's invariants on
// an oblique, non-square-pixel plane and the mosaic's refusals.
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include "core/dicom/dicom_affine.hpp"

namespace rtf::dicom {
namespace {

void expect_affine(const Eigen::Matrix4d& got, const double (&want)[3][4], double tolerance) {
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(got(r, c), want[r][c], tolerance) << "row " << r << " column " << c;
  }
  EXPECT_EQ(got.row(3), Eigen::RowVector4d(0, 0, 0, 1));
}

TEST(DicomAffine, SiemensMosaicEqualsDcm2niix) {
  // pyneal_Siemens/funcData/001_000013_000001.dcm: Prisma, 320 x 320 mosaic of 18 slices (CSA).
  DicomPlane mosaic;
  mosaic.orientation = {1, 0, 0, 0, 0.98657216211243, -0.1633259591884};
  mosaic.position = {-480, -499.16905012171, 8.5640782082644};
  mosaic.pixel_spacing = {3, 3};
  mosaic.rows = mosaic.columns = 320;
  const Eigen::Matrix4d a = mosaic_affine(mosaic, 18, 3.7999999523163, {0.0, 0.16332594, 0.98657216});
  const double dcm2niix[3][4] = {{-3.0, 0.0, 0.0, 96.0},
                                 {0.0, 2.959716320037842, -0.6206386685371399, -66.13677978515625},
                                 {0.0, 0.4899778962135315, 3.748974084854126, -85.02169799804688}};
  expect_affine(a, dcm2niix, 1e-4);
  EXPECT_EQ(mosaic_tiles_per_side(18), 5);
}

TEST(DicomAffine, GeSliceStackEqualsDcm2niix) {
  // pyneal_GE/funcData/s1925: instance 1 of the first volume (64 x 64, oblique) and instance 2's position.
  DicomPlane first;
  first.orientation = {0.998011, 0.0521552, -0.0354018, -0.061137, 0.937673, -0.342098};
  first.position = {-91.234, -131.462, -10.3359};
  first.pixel_spacing = {3, 3};
  first.rows = first.columns = 64;
  const double spacing = slice_spacing(first.position, {-91.1757, -130.156, -6.76772});
  EXPECT_NEAR(spacing, 3.800124168395996, 1e-6);  // dcm2niix's pixdim[3]
  const Eigen::Matrix4d a = stack_affine(first, spacing);
  const double dcm2niix[3][4] = {{-2.9940340518951416, -0.18341106176376343, -0.0583438016474247, 102.78889465332031},
                                 {-0.15646564960479736, 2.8130199909210205, -1.3056548833847046, -45.75825500488281},
                                 {-0.10620543360710144, 1.0262943506240845, 3.5683059692382812, -74.99244689941406}};
  expect_affine(a, dcm2niix, 1e-4);
}

TEST(DicomAffine, ColumnsFollowOrientationSpacingAndRowFlip) {
  // An oblique plane with non-square pixels: column 1 = RAS(row direction) x column spacing, column 2 = -RAS(column
  // direction) x row spacing (rows stored bottom-up), the last DICOM row's first pixel at NIfTI (0, 0, 0).
  DicomPlane p;
  const Eigen::Vector3d r = Eigen::Vector3d(0.9, 0.3, -0.2).normalized();
  const Eigen::Vector3d c = (Eigen::Vector3d(-0.1, 0.8, 0.5) - Eigen::Vector3d(-0.1, 0.8, 0.5).dot(r) * r).normalized();
  p.orientation = {r(0), r(1), r(2), c(0), c(1), c(2)};
  p.position = {10, -20, 30};
  p.pixel_spacing = {2.5, 1.5};  // between rows, between columns
  p.rows = 7;
  p.columns = 5;
  const Eigen::Matrix4d a = stack_affine(p, 4.0);
  const Eigen::Vector3d flip(-1, -1, 1);
  EXPECT_TRUE(a.col(0).head<3>().isApprox(flip.cwiseProduct(r) * 1.5, 1e-12));
  EXPECT_TRUE(a.col(1).head<3>().isApprox(-flip.cwiseProduct(c) * 2.5, 1e-12));
  EXPECT_NEAR(a.col(2).head<3>().norm(), 4.0, 1e-12);
  const Eigen::Vector3d last_row_first_pixel = Eigen::Vector3d(10, -20, 30) + c * 2.5 * 6;
  EXPECT_TRUE(a.col(3).head<3>().isApprox(flip.cwiseProduct(last_row_first_pixel), 1e-12));
  // NIfTI (i, j) = DICOM (column i, row rows - 1 - j): the DICOM first pixel is at NIfTI j = 6.
  const Eigen::Vector4d first_pixel = a * Eigen::Vector4d(0, 6, 0, 1);
  EXPECT_TRUE(first_pixel.head<3>().isApprox(flip.cwiseProduct(Eigen::Vector3d(10, -20, 30)), 1e-12));
}

TEST(DicomAffine, MosaicRefusesSizesThatAreNotWholeTiles) {
  DicomPlane m;
  m.orientation = {1, 0, 0, 0, 1, 0};
  m.pixel_spacing = {2, 2};
  m.rows = m.columns = 321;
  EXPECT_THROW(mosaic_affine(m, 18, 2.0, {0, 0, 1}), std::invalid_argument);
  m.rows = m.columns = 320;
  EXPECT_THROW(mosaic_affine(m, 0, 2.0, {0, 0, 1}), std::invalid_argument);
  EXPECT_THROW(stack_affine(m, 0.0), std::invalid_argument);
  // A CSA normal against r x c (sagittal stacks stored R to L) negates the third column.
  const Eigen::Matrix4d up = mosaic_affine(m, 16, 2.0, {0, 0, 1}), down = mosaic_affine(m, 16, 2.0, {0, 0, -1});
  EXPECT_TRUE(up.col(2).head<3>().isApprox(-down.col(2).head<3>()));
}

}  // namespace
}  // namespace rtf::dicom
