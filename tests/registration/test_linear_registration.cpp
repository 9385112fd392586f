// ctest-label: gpu
// ctest-properties: PROCESSORS 2 (PoCL registrations of a real brain fill every core)
// Linear registration across grids: the device's sums of one iteration against the double-precision reference (odd
// grids of different sizes, orientations and voxel sizes, fresh random blobs, with and without a mask, strides 1 and
// 2); recovery of known rigid, 9- and 12-parameter transforms of a real brain (Colin27 from Debian's mricron-data) on a
// flipped, rotated grid; and bad input.
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <Eigen/LU>
#include <cmath>
#include <random>

#include "core/io/nifti_io.hpp"
#include "core/reference/linear_registration_reference.hpp"
#include "core/registration/linear_registration.hpp"
#include "core/registration/resample.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/registration_fixtures.hpp"
#include "tests/support/synthetic_volumes.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

void expect_sums_match(bool use_mask, int stride, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed << " mask " << use_mask << " stride " << stride);
  const ImageHeader fixed_grid = test::oblique_header({23, 19, 15});
  const ImageHeader moving_grid =
      test::centred_grid({21, 25, 13}, {2.5, 2.0, 3.5}, test::rotation_about(-0.3, {1, 2, -1}), {1.0, -2.0, 0.5});
  Eigen::Matrix4d truth = Eigen::Matrix4d::Identity();
  truth.topLeftCorner<3, 3>() = test::rotation_about(0.05, {0, 1, 1}) * Eigen::Vector3d(1.04, 0.97, 1.0).asDiagonal();
  truth.topRightCorner<3, 1>() = Eigen::Vector3d(1.5, -0.8, 0.6);
  const Image fixed(fixed_grid, test::blobs(fixed_grid, seed));
  const Image moving(moving_grid, test::blobs(moving_grid, seed, truth));
  std::vector<uint8_t> mask(fixed.data().size());
  std::mt19937 rng(seed + 1);
  for (auto& m : mask) m = static_cast<uint8_t>(rng() % 3 != 0);
  const std::optional<std::span<const uint8_t>> mask_span =
      use_mask ? std::optional<std::span<const uint8_t>>(mask) : std::nullopt;
  LinearRegistrationOptions options;
  options.levels = {{3.0 * stride, 0.0}};  // 3 mm voxels; no smoothing: the reference sees the same images
  LinearRegistration reg(test::test_device(), fixed, moving, options, mask_span);
  ASSERT_EQ(reg.stride(0), stride);
  Eigen::Matrix4d estimate = Eigen::Matrix4d::Identity();
  estimate.topLeftCorner<3, 3>() =
      test::rotation_about(0.03, {1, 0, 1}) * Eigen::Vector3d(1.02, 0.99, 1.01).asDiagonal();
  estimate.topRightCorner<3, 1>() = Eigen::Vector3d(1.0, -0.5, 0.2);
  const double scale = 0.9, offset = 0.05;
  const LinearSums dev = reg.sums(0, estimate, scale, offset);
  const LinearSums cpu =
      reference::linear_sums(fixed, moving, mask_span, stride, estimate, reg.fixed_centre(), scale, offset);
  ASSERT_GT(cpu.count, 200);
  // A point exactly on the moving grid's edge may fall either side in float: allow one in a thousand.
  EXPECT_NEAR(static_cast<double>(dev.count), static_cast<double>(cpu.count), 1e-3 * static_cast<double>(cpu.count));
  // Tolerance: float accumulation over a few thousand points; relative to the largest entry of the same row.
  for (int a = 0; a < kLinearSumParams; ++a) {
    const double row_scale = cpu.h.row(a).cwiseAbs().maxCoeff();
    for (int b = 0; b < kLinearSumParams; ++b) EXPECT_NEAR(dev.h(a, b), cpu.h(a, b), 2e-4 * row_scale) << a << "," << b;
    const double bound = std::sqrt(cpu.h(a, a) * cpu.sum_squared_residual);  // Cauchy-Schwarz bound on |b_a|
    EXPECT_NEAR(dev.b[a], cpu.b[a], 2e-4 * bound) << "b" << a;
  }
  EXPECT_NEAR(dev.sum_squared_residual, cpu.sum_squared_residual, 2e-4 * cpu.sum_squared_residual);
  EXPECT_NEAR(dev.ncc(), cpu.ncc(), 1e-4);
}

TEST(LinearRegistration, DeviceSumsMatchReference) {
  std::random_device seeds;
  for (bool mask : {false, true}) {
    for (int stride : {1, 2}) expect_sums_match(mask, stride, seeds());
  }
}

// Colin27 (1 mm, skull-stripped) resampled to a 3 mm fixed grid, and a moving copy on a flipped, rotated 2.5 mm grid
// moved by `truth` (fixed world -> moving world): moving(truth X) = fixed(X).
struct KnownPair {
  Image fixed, moving;
};

KnownPair colin_pair(const Eigen::Matrix4d& truth) {
  const auto path = test::installed_data("mricron/ch2bet.nii.gz");
  if (!path) return {};
  const Image colin = read_nifti(*path);
  const Eigen::Vector3d centre(0.0, -18.0, 18.0);  // near the brain's centre in MNI space
  const ImageHeader fixed_grid = test::centred_grid({61, 73, 61}, {3.0, 3.0, 3.0}, Eigen::Matrix3d::Identity(), centre);
  Eigen::Matrix3d flipped = test::rotation_about(0.35, {1, -1, 2});
  flipped.col(0) *= -1.0;  // a left-right flipped (radiological) grid
  const ImageHeader moving_grid =
      test::centred_grid({80, 88, 72}, {2.5, 2.5, 2.5}, flipped, centre + Eigen::Vector3d(4, -6, 3));
  KnownPair pair;
  pair.fixed = resample(test::test_device(), colin, fixed_grid, {}, ResampleInterpolation::kLinear);
  pair.moving = resample(test::test_device(), colin, moving_grid, {truth.inverse()}, ResampleInterpolation::kLinear);
  return pair;
}

void expect_recovers(int dof, const Eigen::Matrix4d& truth) {
  const KnownPair pair = colin_pair(truth);
  if (pair.fixed.data().empty()) GTEST_SKIP() << test::missing_installed_data("mricron/ch2bet.nii.gz");
  LinearRegistrationOptions options;
  options.dof = dof;
  options.levels = {{6.0, 8.0}, {3.0, 4.0}, {3.0, 0.0}};
  LinearRegistration reg(test::test_device(), pair.fixed, pair.moving, options);
  const LinearRegistrationResult result = reg.run(centre_of_mass_alignment(pair.fixed, pair.moving));
  ASSERT_TRUE(result.failure.empty()) << result.failure;
  const auto [worst, mean] = test::errors_in_brain(pair.fixed, truth, result.transform);
  std::printf("dof %d: NCC %.4f -> %.4f, %d iterations, error in brain mean %.3f mm, max %.3f mm\n", dof,
              result.initial_ncc, result.ncc, result.iterations, mean, worst);
  EXPECT_GT(result.ncc, 0.98);
  EXPECT_GT(result.ncc, result.initial_ncc);
  // Tolerance: both images are linear resamplings of the same 1 mm brain onto 3 and 2.5 mm grids, which blurs them
  // differently; the bar for a known transform is 0.5 mm.
  EXPECT_LT(mean, 0.25);
  EXPECT_LT(worst, 0.5);
}

Eigen::Matrix4d about(const Eigen::Matrix3d& linear, const Eigen::Vector3d& translation, const Eigen::Vector3d& c) {
  Eigen::Matrix4d t = Eigen::Matrix4d::Identity();
  t.topLeftCorner<3, 3>() = linear;
  t.topRightCorner<3, 1>() = c + translation - linear * c;
  return t;
}

TEST(LinearRegistration, RecoversARigidTransformOfARealBrain) {
  const Eigen::Matrix3d r = test::rotation_about(0.14, {0.4, -0.6, 1.0});  // 8 degrees
  expect_recovers(6, about(r, {6.0, -8.0, 5.0}, {0, -18, 18}));
}

TEST(LinearRegistration, RecoversScalesWithNineParameters) {
  const Eigen::Matrix3d r = test::rotation_about(0.1, {-0.2, 0.5, 1.0});
  expect_recovers(9, about(r * Eigen::Vector3d(1.08, 0.94, 1.04).asDiagonal(), {-4.0, 5.0, -3.0}, {0, -18, 18}));
}

TEST(LinearRegistration, RecoversAGeneralAffineWithTwelveParameters) {
  Eigen::Matrix3d a = test::rotation_about(0.12, {1.0, 0.3, -0.4}) * Eigen::Vector3d(1.06, 0.95, 1.03).asDiagonal();
  a(0, 1) += 0.05;
  a(2, 0) -= 0.04;
  expect_recovers(12, about(a, {5.0, 3.0, -6.0}, {0, -18, 18}));
}

TEST(LinearRegistration, RejectsBadInput) {
  Device& device = test::test_device();
  const ImageHeader h = test::oblique_header({12, 10, 8});
  const Image image(h, test::blobs(h, 3));
  ImageHeader h4 = h;
  h4.num_volumes = 2;
  EXPECT_THROW(LinearRegistration(device, Image(h4, 1.0f), image), std::invalid_argument);
  EXPECT_THROW(LinearRegistration(device, image, Image(h, 2.0f)), std::invalid_argument);  // constant
  std::vector<uint8_t> empty(image.data().size(), 0);
  EXPECT_THROW(LinearRegistration(device, image, image, {}, empty), std::invalid_argument);
  Image nans = image;
  for (size_t i = 0; i < nans.data().size(); i += 3) nans.data()[i] = std::nanf("");
  EXPECT_THROW(LinearRegistration(device, nans, image), std::invalid_argument);
  Image singular = image;
  singular.header().affine(1, 1) = singular.header().affine(1, 0) = singular.header().affine(1, 2) = 0.0;
  EXPECT_THROW(LinearRegistration(device, image, singular), std::invalid_argument);
  LinearRegistrationOptions seven;
  seven.dof = 7;
  EXPECT_THROW(LinearRegistration(device, image, image, seven), std::invalid_argument);
  // Moved entirely out of the field of view: a clear failure, not a crash.
  LinearRegistration reg(device, image, image);
  Eigen::Matrix4d far = Eigen::Matrix4d::Identity();
  far(0, 3) = 1000.0;
  const LinearRegistrationResult result = reg.run(far);
  EXPECT_NE(result.failure.find("overlap"), std::string::npos) << result.failure;
}

}  // namespace
}  // namespace rtf
