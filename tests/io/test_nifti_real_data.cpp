// ctest-label: unit
// Reading real NIfTI files nobody on this project made: the Debian-packaged datasets installed by
// scripts/fetch-data.sh (skipped when not installed) and the optional extra data (RTF_EXTRA_DATA_DIR, docs/data.md;
// skipped when absent).
// Expected values were taken from the header bytes and voxel data with an independent Python (struct)
// reader; they agree with what nibabel reports (e.g. nibabel also gives example4d a TR of 2000: the
// file's units say seconds although FSL 3.3 meant milliseconds).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <numeric>

#include "core/io/nifti_io.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf {
namespace {

struct Expected {
  const char* relative;
  bool extra;  // the extra data (RTF_EXTRA_DATA_DIR) instead of the installed data
  std::array<int64_t, 3> dims;
  int64_t nt;
  double tr_s;
  DataType type;
  std::array<double, 3> voxel_mm;
  std::array<double, 4> affine_row0;  // first row of the chosen affine
  double sum;                         // of all scaled voxel values
  double max;
};

double sum(const std::vector<float>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}

class RealNifti : public ::testing::TestWithParam<Expected> {};

TEST_P(RealNifti, HeaderAndDataMatchIndependentReader) {
  const Expected& e = GetParam();
  const auto path = e.extra ? test::extra_data(e.relative) : test::installed_data(e.relative);
  if (!path) {
    GTEST_SKIP() << (e.extra ? test::missing_extra_data(e.relative) : test::missing_installed_data(e.relative));
  }
  const Image image = read_nifti(*path);
  const ImageHeader& h = image.header();
  EXPECT_EQ(h.dims, e.dims);
  EXPECT_EQ(h.num_volumes, e.nt);
  EXPECT_NEAR(h.tr_s, e.tr_s, 1e-5 * e.tr_s);
  EXPECT_EQ(h.source_type, e.type);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(h.voxel_mm[i], e.voxel_mm[i], 1e-4);
  for (int c = 0; c < 4; ++c) EXPECT_NEAR(h.affine(0, c), e.affine_row0[c], 1e-3) << "affine(0, " << c << ")";
  EXPECT_NEAR(sum(image.data()), e.sum, 1e-6 * e.sum);
  EXPECT_EQ(*std::max_element(image.data().begin(), image.data().end()), static_cast<float>(e.max));
  EXPECT_EQ(read_nifti_header(*path).affine, h.affine);
}

std::string test_name(const ::testing::TestParamInfo<Expected>& param_info) {
  std::string name = param_info.param.relative;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

// clang-format off
const Expected kInstalled[] = {
  {"nitime/fmri1.nii.gz", false, {10, 10, 18}, 40, 1.35, DataType::kInt16, {2.0833, 2.0833, 2.3},
   {-2.0833, -0.0044, -0.0019, 96.9955}, 49828854.0, 1147},
  // int16 with scl_slope 0.0754 and scl_inter 3100.76
  {"nipy/functional.nii.gz", false, {17, 21, 3}, 20, 2.0, DataType::kInt16, {4, 4, 8},
   {-4, 0, 0, 32}, 77913290.36292362, 5571.621858656406},
  // big-endian
  {"nipy/anatomical.nii.gz", false, {33, 41, 25}, 1, 0.0, DataType::kInt16, {2, 2, 2},
   {-2, 0, 0, 32}, 284166082.0, 30393},
  // vox_offset 416: a header extension precedes the data
  {"nibabel/example4d.nii.gz", false, {128, 96, 24}, 2, 2000.0, DataType::kInt16, {2, 2, 2.2},
   {-2, 0, 0, 117.8551}, 101985356.0, 1162},
  {"dipy/small_101D.nii.gz", false, {6, 10, 10}, 102, 1.0, DataType::kUint16, {2.5, 2.5, 2.5},
   {-2.4997, 0, -0.0393, 162}, 4809847.0, 1004},
  // uint8 atlas, MNI sform (code 4), no qform
  {"mricron/aal.nii.gz", false, {181, 217, 181}, 1, 0.0, DataType::kUint8, {1, 1, 1},
   {1, 0, 0, -90}, 76656511.0, 116},
};

const Expected kShared[] = {
  {"templates/MNI152_T1_2mm.nii.gz", true, {91, 109, 91}, 1, 0.0, DataType::kInt16, {2, 2, 2},
   {-2, 0, 0, 90}, 2484566264.0, 9968},
  {"scanner/pyneal_testSeries.nii.gz", true, {64, 64, 30}, 3, 1.0, DataType::kUint16, {1, 1, 1},
   {1, 0, 0, 0}, 78739599.0, 1888},
  // float32, vox_offset 2576 (extensions)
  {"anat/fcon1000_Beijing_sub01018_T1_brain.nii.gz", true, {128, 200, 218}, 1, 0.0, DataType::kFloat32,
   {1.33, 1, 1}, {-1.33, 0, 0, 72.8847}, 265767463.0, 920},
  {"scanner/pyneal_GE/dummyMask.nii.gz", true, {64, 64, 18}, 1, 0.0, DataType::kFloat64, {1, 1, 1},
   {1, 0, 0, 0}, 256.0, 1},
};
// clang-format on

INSTANTIATE_TEST_SUITE_P(Installed, RealNifti, ::testing::ValuesIn(kInstalled), test_name);
INSTANTIATE_TEST_SUITE_P(Shared, RealNifti, ::testing::ValuesIn(kShared), test_name);

TEST(RealNiftiData, UncompressedDiffusionSeriesWithUnknownUnits) {
  const auto path = test::installed_data("dipy/small_64D.nii");
  if (!path) GTEST_SKIP() << test::missing_installed_data("dipy/small_64D.nii");
  const ImageHeader h = read_nifti_header(*path);
  EXPECT_EQ(h.dims, (std::array<int64_t, 3>{10, 10, 10}));
  EXPECT_EQ(h.num_volumes, 65);
  EXPECT_DOUBLE_EQ(h.tr_s, 1.0);  // xyzt_units 0: pixdim[4] taken as seconds
  EXPECT_EQ(read_nifti(*path).data().size(), 65000u);
}

TEST(RealNiftiData, BoldSurvivesRewriteInEveryFormat) {
  const auto path = test::installed_data("nitime/fmri1.nii.gz");
  if (!path) GTEST_SKIP() << test::missing_installed_data("nitime/fmri1.nii.gz");
  const Image original = read_nifti(*path);
  test::TempDir dir;
  for (int version : {1, 2}) {
    for (const char* name : {"copy.nii", "copy.nii.gz"}) {
      write_nifti(dir / name, original, DataType::kInt16, version);
      const Image back = read_nifti(dir / name);
      EXPECT_EQ(back.data(), original.data()) << name << " v" << version;
      EXPECT_EQ(back.header().affine, original.header().affine);
      EXPECT_NEAR(back.header().tr_s, 1.35, 1e-6);
    }
  }
}

}  // namespace
}  // namespace rtf
