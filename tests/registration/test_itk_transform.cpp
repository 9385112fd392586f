// ITK text transform files: a hand-worked LPS example (docs/algorithms/registration.md), the centre and translation
// of ITK's affine, round trips at full precision, the other accepted types, and clear errors for everything else.
#include <gtest/gtest.h>

#include <Eigen/LU>
#include <fstream>
#include <random>

#include "core/registration/itk_transform.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf {
namespace {

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(ItkTransform, ReadsTheWorkedExampleInRas) {
  // LPS: y = M (x - c) + c + t with M = diag(2, 1, 1), c = (10, 0, 0), t = (1, 2, 3):
  // y_lps = (2 x - 10 + 1, y + 2, z + 3). A RAS point (-5, 0, 0) is LPS (5, 0, 0) -> LPS (1, 2, 3) = RAS (-1, -2, 3).
  test::TempDir dir;
  write_text(dir / "t.txt",
             "#Insight Transform File V1.0\n#Transform 0\nTransform: AffineTransform_double_3_3\n"
             "Parameters: 2 0 0 0 1 0 0 0 1 1 2 3\nFixedParameters: 10 0 0\n");
  const Eigen::Matrix4d ras = read_itk_affine(dir / "t.txt");
  const Eigen::Vector4d y = ras * Eigen::Vector4d(-5, 0, 0, 1);
  EXPECT_NEAR(y[0], -1.0, 1e-12);
  EXPECT_NEAR(y[1], -2.0, 1e-12);
  EXPECT_NEAR(y[2], 3.0, 1e-12);
  EXPECT_NEAR(ras(0, 0), 2.0, 1e-12);
}

TEST(ItkTransform, RoundTripsBitForBit) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<double> n;
  Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) m(r, c) += (c == 3 ? 20.0 : 0.1) * n(rng);
  }
  test::TempDir dir;
  write_itk_affine(dir / "a.txt", m);
  EXPECT_FALSE(std::filesystem::exists(dir / "a.txt.partial"));
  EXPECT_EQ(read_itk_affine(dir / "a.txt"), m);
}

TEST(ItkTransform, ReadsFloatTranslationAndIdentityTypes) {
  test::TempDir dir;
  write_text(dir / "f.txt",
             "#Insight Transform File V1.0\n#Transform 0\nTransform: MatrixOffsetTransformBase_float_3_3\n"
             "Parameters: 1 0 0 0 1 0 0 0 1 4 5 6\nFixedParameters: 0 0 0\n");
  Eigen::Matrix4d expected = Eigen::Matrix4d::Identity();
  expected.topRightCorner<3, 1>() = Eigen::Vector3d(-4, -5, 6);
  EXPECT_TRUE(read_itk_affine(dir / "f.txt").isApprox(expected));
  write_text(dir / "t.txt",
             "#Insight Transform File V1.0\n#Transform 0\nTransform: TranslationTransform_double_3_3\n"
             "Parameters: 4 5 6\nFixedParameters:\n");
  EXPECT_TRUE(read_itk_affine(dir / "t.txt").isApprox(expected));
  write_text(dir / "i.txt",
             "#Insight Transform File V1.0\n#Transform 0\nTransform: IdentityTransform_double_3_3\n"
             "Parameters:\nFixedParameters:\n");
  EXPECT_EQ(read_itk_affine(dir / "i.txt"), Eigen::Matrix4d::Identity());
}

void expect_error(const std::string& text, const std::string& fragment) {
  test::TempDir dir;
  write_text(dir / "bad.txt", text);
  try {
    read_itk_affine(dir / "bad.txt");
    FAIL() << "accepted: " << text;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.txt"), std::string::npos) << e.what();
  }
}

TEST(ItkTransform, RejectsWhatItCannotRead) {
  const std::string head = "#Insight Transform File V1.0\n#Transform 0\n";
  expect_error("MATLAB 5.0 MAT-file", "ConvertTransformFile");
  expect_error(
      head + "Transform: AffineTransform_double_3_3\nParameters: 1 0 0 0 1 0 0 0 1 0 0\nFixedParameters: 0 0 0\n",
      "needs 12 Parameters");
  expect_error(
      head + "Transform: AffineTransform_double_3_3\nParameters: 1 0 0 0 1 0 0 0 0 0 0 0\nFixedParameters: 0 0 0\n",
      "not invertible");
  expect_error(
      head + "Transform: AffineTransform_double_3_3\nParameters: 1 0 0 0 1 0 0 0 x 0 0 0\nFixedParameters: 0 0 0\n",
      "not a number");
  expect_error(head + "Transform: BSplineTransform_double_3_3\nParameters: 1\nFixedParameters: 0\n", "not supported");
  expect_error(
      "#Insight Transform File V1.0\n#Transform 0\nTransform: CompositeTransform_double_3\n"
      "#Transform 1\nTransform: AffineTransform_double_3_3\n",
      "composite");
  EXPECT_THROW(read_itk_affine("/nonexistent/affine.txt"), std::runtime_error);
}

}  // namespace
}  // namespace rtf
