// Reading a bedpostx input directory: good directories in both bvecs orientations (and data.nii / a bvals column), and
// every rejected input: a missing file, unparsable numbers, wrong counts, a non-unit gradient, no b = 0 volume, a
// negative b, data not 4D, a mask on another grid or empty. Each error message must name the file at fault. dipy's
// "nan nan nan" for a b = 0 volume's gradient reads as 0 0 0 (issue 35); NaN where b > 0 names its line and value.
// ctest-label: unit
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/diffusion/diffusion_data.hpp"
#include "core/io/nifti_io.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf {
namespace {

namespace fs = std::filesystem;

constexpr int kVolumes = 7;  // b = 0, five directions, b = 5 with a zero bvec (counts as b = 0)

// One bedpostx directory's contents; each test edits what it breaks, then write() lays it out.
struct Fixture {
  std::vector<double> bvals{0, 1000, 1000, 1000, 2000, 2000, 5};
  std::vector<std::array<double, 3>> bvecs{{0, 0, 0},     {1, 0, 0},      {0, 1, 0}, {0, 0, 1},
                                           {0.6, 0.8, 0}, {0, 0.6, -0.8}, {0, 0, 0}};
  bool bvecs_as_rows = false;  // false: FSL's 3 rows of N; true: N rows of 3
  bool bvals_as_column = false;
  std::string bvals_text, bvecs_text;  // when set, written instead
  int data_volumes = kVolumes;
  std::string data_name = "data.nii.gz", mask_name = "nodif_brain_mask.nii.gz";
  std::array<int64_t, 3> mask_dims{4, 3, 2};
  double mask_shift_mm = 0;
  bool empty_mask = false;

  ImageHeader header(std::array<int64_t, 3> dims, int64_t volumes) const {
    ImageHeader h;
    h.dims = dims;
    h.num_volumes = volumes;
    h.voxel_mm = {2, 2, 2};
    h.affine = Eigen::Matrix4d::Identity();
    h.affine.topLeftCorner<3, 3>() *= 2.0;
    return h;
  }

  void write(const fs::path& dir) const {
    Image data(header({4, 3, 2}, data_volumes));
    for (size_t i = 0; i < data.data().size(); ++i) data.data()[i] = static_cast<float>(100 + i);
    write_nifti(dir / data_name, data);
    Image mask(header(mask_dims, 1));
    mask.header().affine(0, 3) += mask_shift_mm;
    if (!empty_mask) {
      mask.at(1, 0, 0) = 1;
      mask.at(2, 1, 1) = 3;
      mask.at(3, 2, 1) = -1;
    }
    write_nifti(dir / mask_name, mask);
    std::ofstream(dir / "bvals") << (bvals_text.empty() ? bvals_string() : bvals_text);
    std::ofstream(dir / "bvecs") << (bvecs_text.empty() ? bvecs_string() : bvecs_text);
  }

  std::string bvals_string() const {
    std::string s;
    for (double b : bvals) s += std::to_string(b) + (bvals_as_column ? "\n" : " ");
    return s + "\n";
  }

  std::string bvecs_string() const {
    std::string s;
    if (bvecs_as_rows) {
      for (const auto& g : bvecs)
        s += std::to_string(g[0]) + " " + std::to_string(g[1]) + " " + std::to_string(g[2]) + "\n";
      return s;
    }
    for (size_t c = 0; c < 3; ++c) {
      for (const auto& g : bvecs) s += std::to_string(g[c]) + "  ";
      s += "\n";
    }
    return s;
  }
};

// Expects read_bedpost_dir to throw std::invalid_argument whose message holds every one of `parts`.
void expect_error(const Fixture& fixture, const std::vector<std::string>& parts,
                  const std::function<void(const fs::path&)>& after = {}) {
  test::TempDir dir("rtf-bedpost-dir");
  fixture.write(dir.path());
  if (after) after(dir.path());
  try {
    read_bedpost_dir(dir.path());
    ADD_FAILURE() << "no error; expected one mentioning " << parts.front();
  } catch (const std::invalid_argument& e) {
    for (const std::string& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

void check_good(const DiffusionInput& input, const Fixture& fixture) {
  EXPECT_EQ(input.data.nt(), kVolumes);
  ASSERT_EQ(input.scheme.measurements(), kVolumes);
  for (size_t i = 0; i < static_cast<size_t>(kVolumes); ++i) {
    EXPECT_NEAR(input.scheme.bvals[i], fixture.bvals[i], 1e-6);
    for (size_t c = 0; c < 3; ++c) EXPECT_NEAR(input.scheme.bvecs[i][c], fixture.bvecs[i][c], 1e-6) << i;
  }
  ASSERT_EQ(input.mask.size(), 24u);
  // Mask voxels (1,0,0), (2,1,1), (3,2,1): indices x + 4 (y + 3 z).
  EXPECT_EQ(input.voxels, (std::vector<int64_t>{1, 18, 23}));
  EXPECT_EQ(input.mask[18], 1);
  EXPECT_EQ(input.mask[0], 0);
  const std::vector<float> signals = gather_mask_signals(input);
  ASSERT_EQ(signals.size(), 3u * kVolumes);
  for (size_t t = 0; t < static_cast<size_t>(kVolumes); ++t) {
    EXPECT_EQ(signals[1 * kVolumes + t], static_cast<float>(100 + t * 24 + 18));
  }
}

TEST(DiffusionData, ReadsFslLayout) {
  test::TempDir dir("rtf-bedpost-dir");
  Fixture fixture;
  fixture.write(dir.path());
  check_good(read_bedpost_dir(dir.path()), fixture);
}

TEST(DiffusionData, ReadsRowsOfBvecsAColumnOfBvalsAndUncompressedFiles) {
  test::TempDir dir("rtf-bedpost-dir");
  Fixture fixture;
  fixture.bvecs_as_rows = true;
  fixture.bvals_as_column = true;
  fixture.data_name = "data.nii";
  fixture.mask_name = "nodif_brain_mask.nii";
  fixture.write(dir.path());
  check_good(read_bedpost_dir(dir.path()), fixture);
}

TEST(DiffusionData, NormalisesNearlyUnitGradients) {
  test::TempDir dir("rtf-bedpost-dir");
  Fixture fixture;
  fixture.bvecs[1] = {1.008, 0, 0};
  fixture.bvecs[2] = {0, -0.995, 0};
  fixture.write(dir.path());
  const DiffusionInput input = read_bedpost_dir(dir.path());
  EXPECT_DOUBLE_EQ(input.scheme.bvecs[1][0], 1.0);
  EXPECT_DOUBLE_EQ(input.scheme.bvecs[2][1], -1.0);
  EXPECT_EQ(input.scheme.bvecs[6][0], 0.0);  // b = 5 counts as b = 0: its zero vector stays
}

TEST(DiffusionData, NanGradientsOfBZeroVolumesReadAsZero) {
  // Volume 0 (b = 0) and volume 6 (b = 5) as dipy writes them, in the spellings numpy and others use.
  for (const char* text : {"nan 1 0 0 0.6 0 NaN\nnan 0 1 0 0.8 0.6 -nan\nnan 0 0 1 0 -0.8 NaN\n",
                           "nan nan nan\n1 0 0\n0 1 0\n0 0 1\n0.6 0.8 0\n0 0.6 -0.8\n-nan NaN nan\n"}) {
    SCOPED_TRACE(text);
    test::TempDir dir("rtf-bedpost-dir");
    Fixture fixture;
    fixture.bvecs_text = text;
    fixture.write(dir.path());
    check_good(read_bedpost_dir(dir.path()), fixture);  // the fixture's b = 0 gradients are 0 0 0
  }
}

TEST(DiffusionData, NanGradientWhereBIsNotZeroIsAnErrorNamingItsPlace) {
  Fixture three_rows;
  three_rows.bvecs_text = "0 1 0 0 0.6 0 0\n0 0 nan 0 0.8 0.6 0\n0 0 0 1 0 -0.8 0\n";
  expect_error(three_rows, {"bvecs", "line 2, value 3", "NaN", "volume 2", "b = 1000"});
  Fixture rows;
  rows.bvecs_text = "0 0 0\n1 0 0\n0 NaN 0\n0 0 1\n0.6 0.8 0\n0 0.6 -0.8\n0 0 0\n";
  expect_error(rows, {"bvecs", "line 3, value 2", "volume 2"});
  Fixture infinite;
  infinite.bvecs_text = "inf 1 0 0 0.6 0 0\n0 0 1 0 0.8 0.6 0\n0 0 0 1 0 -0.8 0\n";
  expect_error(infinite, {"bvecs", "line 1", "'inf' is not a finite number"});
}

TEST(DiffusionData, MissingFiles) {
  const Fixture fixture;
  expect_error(fixture, {"data.nii.gz", "missing"}, [](const fs::path& d) { fs::remove(d / "data.nii.gz"); });
  expect_error(fixture, {"bvals", "missing"}, [](const fs::path& d) { fs::remove(d / "bvals"); });
  expect_error(fixture, {"bvecs", "missing"}, [](const fs::path& d) { fs::remove(d / "bvecs"); });
  expect_error(fixture, {"nodif_brain_mask.nii.gz", "missing"},
               [](const fs::path& d) { fs::remove(d / "nodif_brain_mask.nii.gz"); });
}

TEST(DiffusionData, UnparsableNumbers) {
  Fixture bad_bvals;
  bad_bvals.bvals_text = "0 1000 1000 abc 2000 2000 5\n";
  expect_error(bad_bvals, {"bvals", "abc", "not a finite number"});
  Fixture bad_bvecs;
  bad_bvecs.bvecs_text = "0 1 0 0 0.6 0 0\n0 0 1 0 0.8 0.6 0\n0 0 0 1 0x -0.8 0\n";
  expect_error(bad_bvecs, {"bvecs", "line 3", "0x"});
  Fixture empty;
  empty.bvals_text = "\n\n";
  expect_error(empty, {"bvals", "no numbers"});
}

TEST(DiffusionData, CountsMustMatchTheVolumes) {
  Fixture short_bvals;
  short_bvals.bvals.pop_back();
  expect_error(short_bvals, {"bvals", "6 b-values for 7 volumes"});
  Fixture long_bvecs;
  long_bvecs.bvecs.push_back({1, 0, 0});
  expect_error(long_bvecs, {"bvecs", "8 gradient directions for 7 volumes"});
  Fixture long_rows;
  long_rows.bvecs_as_rows = true;
  long_rows.bvecs.pop_back();
  expect_error(long_rows, {"bvecs", "6 gradient directions for 7 volumes"});
  Fixture ragged;
  ragged.bvecs_text = "0 1 0\n0 0 1 0\n";
  expect_error(ragged, {"bvecs", "3 rows of N values or N rows of 3"});
  Fixture bvals_matrix;
  bvals_matrix.bvals_text = "0 1000 1000 1000\n2000 2000 5\n";
  expect_error(bvals_matrix, {"bvals", "one row"});
}

TEST(DiffusionData, GradientNorms) {
  Fixture not_unit;
  not_unit.bvecs[4] = {0.6, 0.6, 0};  // norm 0.8485
  expect_error(not_unit, {"bvecs", "volume 4", "column 5", "0.848528", "b = 2000"});
  Fixture not_unit_rows = not_unit;
  not_unit_rows.bvecs_as_rows = true;
  expect_error(not_unit_rows, {"bvecs", "row 5"});
  Fixture zero_at_b;
  zero_at_b.bvecs[1] = {0, 0, 0};
  expect_error(zero_at_b, {"bvecs", "volume 1", "norm 0"});
}

TEST(DiffusionData, BValues) {
  Fixture no_b0;
  no_b0.bvals = {100, 1000, 1000, 1000, 2000, 2000, 1000};
  no_b0.bvecs[0] = no_b0.bvecs[6] = {1, 0, 0};
  expect_error(no_b0, {"bvals", "no b = 0 volume"});
  Fixture negative;
  negative.bvals[2] = -1000;
  expect_error(negative, {"bvals", "negative", "volume 2"});
}

TEST(DiffusionData, DataMustBe4D) {
  Fixture three_d;
  three_d.data_volumes = 1;
  expect_error(three_d, {"data.nii.gz", "4D"});
}

TEST(DiffusionData, MaskGridAndContent) {
  Fixture other_dims;
  other_dims.mask_dims = {4, 3, 3};
  expect_error(other_dims, {"nodif_brain_mask.nii.gz", "4x3x3", "data.nii.gz"});
  Fixture shifted;
  shifted.mask_shift_mm = 1.0;
  expect_error(shifted, {"nodif_brain_mask.nii.gz", "affine"});
  Fixture empty;
  empty.empty_mask = true;
  expect_error(empty, {"nodif_brain_mask.nii.gz", "empty"});
  Fixture four_d;
  expect_error(four_d, {"nodif_brain_mask.nii.gz", "3D"}, [&](const fs::path& d) {
    write_nifti(d / "nodif_brain_mask.nii.gz", Image(four_d.header({4, 3, 2}, 2), 1.0f));
  });
}

}  // namespace
}  // namespace rtf
