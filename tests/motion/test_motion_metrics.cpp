// DVARS on analytic volumes (masked RMS of the change; NaN voxels left out; empty mask; size mismatch) and the motion
// files: FSL .par (rx ry rz in radians, then tx ty tz in mm), AFNI .1D and the tsv with its header, read back.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/motion/motion_metrics.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf {
namespace {

TEST(Dvars, IsTheMaskedRmsOfTheChange) {
  const std::vector<float> a{1, 2, 3, 4, 5}, b{2, 2, 1, 4, 100};
  const std::vector<uint8_t> mask{1, 1, 1, 1, 0};
  // Differences 1, 0, -2, 0 over 4 voxels: sqrt(5 / 4); the unmasked 95 does not count.
  EXPECT_NEAR(dvars(a, b, mask), std::sqrt(5.0 / 4.0), 1e-12);
  EXPECT_EQ(dvars(a, b, std::vector<uint8_t>(5, 0)), 0.0);
  EXPECT_THROW(dvars(a, std::vector<float>{1, 2}, mask), std::invalid_argument);
}

TEST(Dvars, LeavesOutNonFiniteVoxels) {
  const std::vector<float> a{1, 2, std::nanf(""), 4}, b{2, INFINITY, 3, 6};
  const std::vector<uint8_t> mask{1, 1, 1, 1};
  EXPECT_NEAR(dvars(a, b, mask), std::sqrt((1.0 + 4.0) / 2.0), 1e-12);  // voxels 0 and 3 only
  const std::vector<float> nan_volume(4, std::nanf(""));
  EXPECT_TRUE(std::isnan(dvars(a, nan_volume, mask)));  // nothing to compare: not a number, not 0
}

std::vector<std::vector<double>> read_rows(const std::filesystem::path& path, bool skip_header) {
  std::ifstream in(path);
  std::string line;
  if (skip_header) std::getline(in, line);
  std::vector<std::vector<double>> rows;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::vector<double> row;
    double v;
    while (s >> v) row.push_back(v);
    rows.push_back(row);
  }
  return rows;
}

TEST(MotionFiles, ColumnOrdersAndUnits) {
  test::TempDir tmp;
  VolumeMotion m;
  m.params = {{1.5, -2.0, 0.25}, {3.0, -1.0, 0.5}};
  m.fd_mm = 0.75;
  m.dvars = 12.5;
  m.iterations = 7;
  const std::vector<VolumeMotion> motion{VolumeMotion{}, m};
  write_fsl_par(tmp.path() / "p.par", motion);
  write_afni_1d(tmp.path() / "p.1D", motion);
  write_motion_tsv(tmp.path() / "p_fd.tsv", motion);

  const auto par = read_rows(tmp.path() / "p.par", false);
  ASSERT_EQ(par.size(), 2u);
  ASSERT_EQ(par[1].size(), 6u);
  const double rad = M_PI / 180.0;
  EXPECT_NEAR(par[1][0], 3.0 * rad, 1e-8);
  EXPECT_NEAR(par[1][1], -1.0 * rad, 1e-8);
  EXPECT_NEAR(par[1][2], 0.5 * rad, 1e-8);
  EXPECT_NEAR(par[1][3], 1.5, 1e-6);
  EXPECT_NEAR(par[1][4], -2.0, 1e-6);
  EXPECT_NEAR(par[1][5], 0.25, 1e-6);

  const auto afni = read_rows(tmp.path() / "p.1D", false);
  ASSERT_EQ(afni.size(), 2u);
  ASSERT_EQ(afni[1].size(), 6u);
  for (double v : afni[0]) EXPECT_EQ(v, 0.0);
  // 3dvolreg's order as core/geometry/rigid_transform.hpp documents it: rz, rx, ry (degrees), tz, -tx, -ty (mm).
  const std::vector<double> expected{0.5, 3.0, -1.0, 0.25, -1.5, 2.0};
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(afni[1][i], expected[i], 1e-6) << i;

  const auto tsv = read_rows(tmp.path() / "p_fd.tsv", true);
  ASSERT_EQ(tsv.size(), 2u);
  ASSERT_EQ(tsv[1].size(), 12u);
  EXPECT_EQ(tsv[1][0], 1.0);
  EXPECT_NEAR(tsv[1][1], 0.75, 1e-6);
  EXPECT_NEAR(tsv[1][2], 12.5, 1e-4);
  EXPECT_NEAR(tsv[1][3], 1.5, 1e-6);
  EXPECT_NEAR(tsv[1][6], 3.0, 1e-6);
  EXPECT_EQ(tsv[1][10], 7.0);
  EXPECT_THROW(write_fsl_par(tmp.path() / "missing-dir" / "x.par", motion), std::runtime_error);
}

}  // namespace
}  // namespace rtf
