// ctest-label: gpu
// Motion correction on real BOLD volumes (docs/data.md): a known rigid transform applied to a real volume (cubic
// resampling in double precision) is recovered within 0.05 mm and 0.05 degrees per parameter. Data: nibabel's
// example4d (128x96x24, 2x2x2.2 mm) and, where the extra data is present (RTF_EXTRA_DATA_DIR), pyneal's 64x64x30 test
// series. nipy's functional.nii.gz has 3 slices, too few for 3D registration (the constructor refuses fewer than 4 per
// axis; tested). nitime's fmri1 is a 10x10x18 crop (20 mm across): the residual of the moved copy is dominated by the
// band moved in across its edges and rotations are barely constrained, so the fit does not converge there (measured;
// not a test case, see the docs). The fit uses voxels at least 4 voxels from every face, so that the band the transform
// moves in from outside the field of view (zeros in the moved copy) does not count; the test design is in
// docs/algorithms/motion_correction.md.
#include <gtest/gtest.h>

#include <Eigen/LU>
#include <optional>

#include "core/io/nifti_io.hpp"
#include "core/reference/registration_reference.hpp"
#include "core/registration/rigid_registration.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

std::vector<uint8_t> interior_mask(const ImageHeader& h, std::span<const float> v, int margin) {
  double mean = 0.0;
  for (float x : v) mean += x;
  mean /= static_cast<double>(v.size());
  std::vector<uint8_t> m(v.size(), 0);
  for (int64_t z = margin; z < h.dims[2] - margin; ++z) {
    for (int64_t y = margin; y < h.dims[1] - margin; ++y) {
      for (int64_t x = margin; x < h.dims[0] - margin; ++x) {
        const auto i = static_cast<size_t>((z * h.dims[1] + y) * h.dims[0] + x);
        m[i] = v[i] > 0.3 * mean ? 1 : 0;
      }
    }
  }
  return m;
}

void expect_recovered(const std::filesystem::path& path, const std::string& file,
                      const std::vector<RigidParams>& motions, int margin, std::optional<double> voxel_mm = {}) {
  const Image series = read_nifti(path);
  Image ref = series.extract_volume(0);
  if (voxel_mm) {  // a header without voxel sizes: assume these
    ref.header().voxel_mm = {*voxel_mm, *voxel_mm, *voxel_mm};
    ref.header().affine.topLeftCorner<3, 3>() = Eigen::Matrix3d::Identity() * *voxel_mm;
  }
  const ImageHeader& h = ref.header();
  const RegistrationOptions options;
  const auto mask = interior_mask(h, ref.data(), margin);
  RigidRegistration reg(test::test_device(), h, options, mask);
  reg.set_reference(ref.data());
  for (const RigidParams& truth : motions) {
    const Eigen::Matrix4d t = rigid_matrix(truth, reg.centre());
    const std::vector<double> moved =
        reference::reslice(ref.data(), {h.dims, h.affine}, t.inverse(), 0.0, Interpolation::kCubic);
    const std::vector<float> moving(moved.begin(), moved.end());
    const RegistrationResult r = reg.register_volume(moving);
    ASSERT_TRUE(r.converged) << file << ": " << r.failure << " (" << r.voxels << " voxels)";
    const RigidParams got = rigid_params(r.transform, reg.centre());
    for (size_t a = 0; a < 3; ++a) {
      EXPECT_NEAR(got.translation_mm[a], truth.translation_mm[a], 0.05) << file << " axis " << a;
      EXPECT_NEAR(got.rotation_deg[a], truth.rotation_deg[a], 0.05) << file << " axis " << a;
    }
    std::printf("%s: errors t %.4f %.4f %.4f mm, r %.4f %.4f %.4f deg (%d iterations)\n", file.c_str(),
                got.translation_mm[0] - truth.translation_mm[0], got.translation_mm[1] - truth.translation_mm[1],
                got.translation_mm[2] - truth.translation_mm[2], got.rotation_deg[0] - truth.rotation_deg[0],
                got.rotation_deg[1] - truth.rotation_deg[1], got.rotation_deg[2] - truth.rotation_deg[2], r.iterations);
  }
}

TEST(MotionRealBold, NibabelExample4d) {
  const std::string file = "nibabel/example4d.nii.gz";
  const auto path = test::installed_data(file);
  if (!path) GTEST_SKIP() << test::missing_installed_data(file);
  expect_recovered(*path, file, {{{1.2, -0.8, 0.5}, {0.9, -1.4, 0.6}}, {{-2.5, 1.9, -1.1}, {-2.0, 0.8, 2.4}}}, 4);
}

// pyneal's test series (the extra data, RTF_EXTRA_DATA_DIR; CI has it): a real 64x64x30 uint16 EPI series whose header
// carries no voxel size (1 mm is read); 3 mm isotropic is assumed, a typical EPI voxel.
TEST(MotionRealBold, PynealTestSeries) {
  const std::string file = "scanner/pyneal_testSeries.nii.gz";
  const auto path = test::extra_data(file);
  if (!path) GTEST_SKIP() << test::missing_extra_data(file);
  expect_recovered(*path, file, {{{0.7, -0.4, 0.3}, {1.1, -0.6, 0.8}}, {{-1.3, 0.9, -0.5}, {-0.7, 1.4, -1.2}}}, 4, 3.0);
}

TEST(MotionRealBold, NipyFunctionalHasTooFewSlices) {
  const auto path = test::installed_data("nipy/functional.nii.gz");
  if (!path) GTEST_SKIP() << test::missing_installed_data("nipy/functional.nii.gz");
  const Image series = read_nifti(*path);
  ASSERT_EQ(series.nz(), 3);
  EXPECT_THROW(RigidRegistration(test::test_device(), series.header()), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
