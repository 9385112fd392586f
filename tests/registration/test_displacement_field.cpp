// ctest-label: gpu
// Displacement fields as transforms: the ITK file convention (NIfTI vector image, intent 1007, 5D x,y,z,1,3, LPS)
// round-trips and is what the header says; a constant field equals the ITK translation with the same vector; device
// resampling through a chain of affines and fields equals the double-precision reference on odd grids with fresh
// random data; bad fields are refused with a clear error.
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <cmath>
#include <fstream>
#include <random>

#include "core/io/nifti_io.hpp"
#include "core/reference/resample_reference.hpp"
#include "core/registration/displacement_field.hpp"
#include "core/registration/itk_transform.hpp"
#include "core/registration/resample.hpp"
#include "tests/support/synthetic_volumes.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

ImageHeader grid(std::array<int64_t, 3> dims, double voxel, double angle, const Eigen::Vector3d& origin) {
  ImageHeader h;
  h.dims = dims;
  h.voxel_mm = {voxel, voxel, voxel};
  h.affine.topLeftCorner<3, 3>() =
      Eigen::AngleAxisd(angle, Eigen::Vector3d(0.2, 0.9, -0.4).normalized()).toRotationMatrix() * voxel;
  h.affine.topRightCorner<3, 1>() = origin;
  return h;
}

Image random_field(const ImageHeader& h, uint32_t seed, double size) {
  ImageHeader fh = h;
  fh.num_volumes = 3;
  Image field(fh);
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, static_cast<float>(size));
  for (float& v : field.data()) v = n(rng);
  return field;
}

TEST(DisplacementField, WritesTheItkConventionAndReadsItBack) {
  test::TempDir dir;
  const ImageHeader h = grid({7, 6, 5}, 2.0, 0.3, {-5, -4, -3});
  const Image ras = random_field(h, std::random_device{}(), 1.5);
  write_displacement_field(dir / "field.nii.gz", ras);
  const ImageHeader on_disk = read_nifti_header(dir / "field.nii.gz");
  EXPECT_TRUE(on_disk.vector_components);  // 5D with intent 1007
  EXPECT_EQ(on_disk.num_volumes, 3);
  const Image raw = read_nifti(dir / "field.nii.gz");  // LPS on disk: x and y negated
  const auto n = static_cast<size_t>(h.voxels_per_volume());
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(raw.data()[i], -ras.data()[i]);
    ASSERT_EQ(raw.data()[n + i], -ras.data()[n + i]);
    ASSERT_EQ(raw.data()[2 * n + i], ras.data()[2 * n + i]);
  }
  const Image back = read_displacement_field(dir / "field.nii.gz");
  EXPECT_EQ(back.data(), ras.data());
  EXPECT_TRUE(back.header().affine.isApprox(h.affine, 1e-6));
}

TEST(DisplacementField, AConstantFieldIsTheItkTranslationWithTheSameVector) {
  const ImageHeader h = test::oblique_header({19, 17, 13});
  const Image image(h, test::blobs(h, 4));
  // A field covering the image with LPS displacement (1.5, -2, 0.75) everywhere, and the same as a translation file.
  const ImageHeader field_grid = grid({40, 40, 36}, 2.0, 0.0, {-40, -40, -36});
  ImageHeader fh = field_grid;
  fh.num_volumes = 3;
  Image lps(fh);
  const auto n = static_cast<size_t>(field_grid.voxels_per_volume());
  std::fill(lps.data().begin(), lps.data().begin() + static_cast<std::ptrdiff_t>(n), 1.5f);
  std::fill(lps.data().begin() + static_cast<std::ptrdiff_t>(n),
            lps.data().begin() + static_cast<std::ptrdiff_t>(2 * n), -2.0f);
  std::fill(lps.data().begin() + static_cast<std::ptrdiff_t>(2 * n), lps.data().end(), 0.75f);
  lps.header().vector_components = true;
  test::TempDir dir;
  write_nifti(dir / "field.nii.gz", lps);
  std::ofstream(dir / "t.txt") << "#Insight Transform File V1.0\n#Transform 0\n"
                                  "Transform: TranslationTransform_double_3_3\nParameters: 1.5 -2 0.75\n"
                                  "FixedParameters:\n";
  const auto field = std::make_shared<const Image>(read_displacement_field(dir / "field.nii.gz"));
  const Eigen::Matrix4d translation = read_itk_affine(dir / "t.txt");
  const Image by_field =
      resample(test::test_device(), image, h, {SpatialTransform(field)}, ResampleInterpolation::kLinear);
  const Image by_affine = resample(test::test_device(), image, h, {translation}, ResampleInterpolation::kLinear);
  for (size_t i = 0; i < by_field.data().size(); ++i) {
    ASSERT_NEAR(by_field.data()[i], by_affine.data()[i], 1e-5f) << i;
  }
}

TEST(DisplacementField, DeviceMatchesReferenceThroughAChainOfAffinesAndFields) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const ImageHeader in_grid = grid({17, 15, 11}, 2.5, 0.2, {-20, -18, -14});
  ImageHeader in4 = in_grid;
  in4.num_volumes = 2;
  Image input(in4);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : input.data()) v = u(rng);
  // Two fields on their own (smaller, rotated) grids: points outside them are not displaced.
  const auto f1 =
      std::make_shared<const Image>(random_field(grid({9, 11, 7}, 3.0, -0.3, {-12, -15, -9}), seed + 1, 1.0));
  const auto f2 =
      std::make_shared<const Image>(random_field(grid({13, 9, 8}, 2.2, 0.5, {-14, -10, -8}), seed + 2, 0.7));
  Eigen::Matrix4d a = Eigen::Matrix4d::Identity();
  a.topLeftCorner<3, 3>() = Eigen::AngleAxisd(0.1, Eigen::Vector3d::UnitZ()).toRotationMatrix();
  a.topRightCorner<3, 1>() = Eigen::Vector3d(1.0, -2.0, 0.5);
  const std::vector<SpatialTransform> chain{f1, a, f2};
  const ImageHeader out_grid = grid({19, 13, 9}, 2.1, -0.2, {-19, -13, -10});
  for (ResampleInterpolation interp : {ResampleInterpolation::kLinear, ResampleInterpolation::kCubic}) {
    const Image dev = resample(test::test_device(), input, out_grid, chain, interp, -9.0f);
    const Image cpu = reference::resample(input, out_grid, chain, interp, -9.0);
    int64_t inside = 0;
    for (size_t i = 0; i < cpu.data().size(); ++i) {
      if (cpu.data()[i] != -9.0f) ++inside;
      // Tolerance: positions in float through three transforms (~1e-5 mm) on data with slopes up to 2 per voxel.
      ASSERT_NEAR(dev.data()[i], cpu.data()[i], 2e-4f) << to_string(interp) << " voxel " << i;
    }
    EXPECT_GT(inside, static_cast<int64_t>(cpu.data().size() / 4));
  }
}

TEST(DisplacementField, RefusesFieldsItCannotUse) {
  test::TempDir dir;
  const ImageHeader h = grid({5, 5, 5}, 2.0, 0.0, {0, 0, 0});
  ImageHeader two = h;
  two.num_volumes = 2;
  write_nifti(dir / "two.nii.gz", Image(two, 0.0f));
  EXPECT_THROW(read_displacement_field(dir / "two.nii.gz"), std::runtime_error);
  Image nan_field = random_field(h, 1, 1.0);
  nan_field.data()[7] = std::nanf("");
  nan_field.header().vector_components = true;
  write_nifti(dir / "nan.nii.gz", nan_field);
  try {
    read_displacement_field(dir / "nan.nii.gz");
    FAIL() << "a field with NaN was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("NaN"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rtf
