// DICOM headers through GDCM (scanner/dicom/dicom_header.hpp) on pyneal's real scanner files (scanner/ of the extra
// data, RTF_EXTRA_DATA_DIR): the Siemens Prisma mosaic's fields and CSA header (18 slices, slice normal,
// MosaicRefAcqTimes), the GE slices' fields, and from them the affine Debian's dcm2niix (v1.0.20220720) wrote for these
// series, within 1e-4 mm. A file that is not DICOM is a DicomError naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "scanner/dicom/dicom_header.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::dicom {
namespace {

void expect_affine(const Eigen::Matrix4d& got, const double (&want)[3][4]) {
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(got(r, c), want[r][c], 1e-4) << "row " << r << " column " << c;
  }
}

TEST(DicomHeader, SiemensMosaicAndItsCsaHeader) {
  const auto file = test::extra_data("scanner/pyneal_Siemens/funcData/001_000013_000001.dcm");
  if (!file) GTEST_SKIP() << test::missing_extra_data("scanner/pyneal_Siemens/funcData/001_000013_000001.dcm");
  const DicomHeader h = read_dicom_header(*file);
  EXPECT_EQ(h.modality, "MR");
  EXPECT_EQ(h.transfer_syntax_uid, "1.2.840.10008.1.2.1");
  EXPECT_EQ(h.plane.rows, 320);
  EXPECT_EQ(h.plane.columns, 320);
  EXPECT_EQ(h.instance_number, 1);
  EXPECT_EQ(h.mosaic_slices, 18);
  EXPECT_TRUE(h.is_mosaic());
  ASSERT_TRUE(h.csa_slice_normal.has_value());
  EXPECT_NEAR((*h.csa_slice_normal)[1], 0.16332594, 1e-8);
  EXPECT_NEAR((*h.csa_slice_normal)[2], 0.98657216, 1e-8);
  ASSERT_EQ(h.mosaic_ref_acq_times_ms.size(), 18u);
  EXPECT_NEAR(h.mosaic_ref_acq_times_ms[0], 490.0, 1e-6);  // interleaved: slice 1 first
  EXPECT_NEAR(h.mosaic_ref_acq_times_ms[1], 0.0, 1e-6);
  EXPECT_NEAR(h.mosaic_ref_acq_times_ms[17], 435.0, 1e-6);
  EXPECT_NEAR(h.repetition_time_ms, 1000.0, 1e-6);
  const double dcm2niix[3][4] = {{-3.0, 0.0, 0.0, 96.0},
                                 {0.0, 2.959716320037842, -0.6206386685371399, -66.13677978515625},
                                 {0.0, 0.4899778962135315, 3.748974084854126, -85.02169799804688}};
  expect_affine(mosaic_affine(h.plane, h.mosaic_slices, h.slice_thickness, *h.csa_slice_normal), dcm2niix);
}

TEST(DicomHeader, GeSlicesGiveDcm2niixsAffine) {
  const std::string first = "scanner/pyneal_GE/funcData/s1925/i2862280.MRDC.1";
  const auto file = test::extra_data(first);
  if (!file) GTEST_SKIP() << test::missing_extra_data(first);
  std::vector<DicomHeader> headers;
  for (const auto& entry : std::filesystem::directory_iterator(file->parent_path())) {
    headers.push_back(read_dicom_header(entry.path()));
  }
  ASSERT_EQ(headers.size(), 54u);
  std::sort(headers.begin(), headers.end(),
            [](const DicomHeader& a, const DicomHeader& b) { return a.instance_number < b.instance_number; });
  EXPECT_EQ(headers[0].mosaic_slices, 0);
  EXPECT_FALSE(headers[0].is_mosaic());
  EXPECT_EQ(headers[0].pixel_representation, 1);
  const double dcm2niix[3][4] = {{-2.9940340518951416, -0.18341106176376343, -0.0583438016474247, 102.78889465332031},
                                 {-0.15646564960479736, 2.8130199909210205, -1.3056548833847046, -45.75825500488281},
                                 {-0.10620543360710144, 1.0262943506240845, 3.5683059692382812, -74.99244689941406}};
  expect_affine(stack_affine(headers[0].plane, slice_spacing(headers[0].plane.position, headers[1].plane.position)),
                dcm2niix);
}

TEST(DicomHeader, NonDicomFileIsAnErrorNamingIt) {
  const test::TempDir dir;
  const std::filesystem::path path = dir.path() / "notes.txt";
  std::ofstream(path) << "not a DICOM file\n";
  try {
    read_dicom_header(path);
    FAIL() << "no error";
  } catch (const DicomError& e) {
    EXPECT_NE(std::string(e.what()).find("notes.txt"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_dicom_header(dir.path() / "missing.dcm"), DicomError);
}

}  // namespace
}  // namespace rtf::dicom
