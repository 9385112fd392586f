// ctest-label: gpu
// Device rigid registration against the double-precision reference: the normal-equation sums of one iteration
// (trilinear and cubic, rigid and rigid + intensity, with and without a mask, odd grid, random smooth data, fresh
// seeds), reslicing, the whole registration on analytic data, and bad input (empty mask, NaNs, wrong sizes).
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <Eigen/LU>
#include <cmath>
#include <random>

#include "core/reference/registration_reference.hpp"
#include "core/registration/rigid_registration.hpp"
#include "tests/support/synthetic_volumes.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

using test::blobs;
using test::oblique_header;

reference::RegistrationGrid grid_of(const ImageHeader& h) {
  return {h.dims, h.affine};
}

void expect_sums_match(Interpolation interpolation, bool intensity, bool use_mask, uint32_t seed, int nan_voxels = 0) {
  const ImageHeader h = oblique_header({29, 23, 17});
  auto ref = blobs(h, seed);
  const Eigen::Matrix4d moved = rigid_matrix({{1.3, -0.7, 0.4}, {1.1, -0.6, 1.7}}, Eigen::Vector3d(2, -1, 0));
  auto mov = blobs(h, seed, moved, Eigen::Vector3d(0.02, 0.0, -0.03));
  std::mt19937 nan_rng(seed + 2);
  for (int k = 0; k < nan_voxels; ++k) {  // NaN voxels in both volumes: left out alike by device and reference
    ref[nan_rng() % ref.size()] = std::nanf("");
    mov[nan_rng() % mov.size()] = std::nanf("");
  }
  std::vector<uint8_t> mask(ref.size());
  std::mt19937 rng(seed + 1);
  for (auto& m : mask) m = static_cast<uint8_t>(rng() % 3 != 0);
  RegistrationOptions options;
  options.levels = {{1, 0.0, interpolation}};
  options.intensity_model = intensity;
  RigidRegistration reg(test::test_device(), h, options,
                        use_mask ? std::optional<std::span<const uint8_t>>(mask) : std::nullopt);
  reg.set_reference(ref);
  const Eigen::Matrix4d estimate = rigid_matrix({{1.0, -0.5, 0.2}, {0.8, -0.3, 1.2}}, reg.centre());
  const Eigen::Vector4d lambda(0.01, -0.02, 0.005, 0.01);
  ASSERT_TRUE(reg.register_volume(mov).voxels > 0);  // loads the moving volume (result not checked here)
  const NormalEquations dev = reg.sums(0, estimate, lambda);
  const NormalEquations cpu = reference::registration_sums(
      ref, mov, grid_of(h), estimate, reg.centre(), 1,
      use_mask ? std::optional<std::span<const uint8_t>>(mask) : std::nullopt, intensity, lambda, 50.0, interpolation);
  EXPECT_EQ(dev.count, cpu.count);
  const int n = intensity ? kMaxParams : kRigidParams;
  // Tolerance: float accumulation of ~6,000 terms; relative to the largest entry of the same row.
  for (int a = 0; a < n; ++a) {
    const double scale = cpu.h.row(a).head(n).cwiseAbs().maxCoeff();
    for (int b = 0; b < n; ++b) EXPECT_NEAR(dev.h(a, b), cpu.h(a, b), 2e-5 * scale) << a << "," << b;
    const double bscale = std::sqrt(cpu.h(a, a) * cpu.sum_squared_residual);  // Cauchy-Schwarz bound on |b_a|
    EXPECT_NEAR(dev.b[a], cpu.b[a], 2e-5 * bscale) << "b" << a;
  }
  EXPECT_NEAR(dev.sum_squared_residual, cpu.sum_squared_residual, 2e-5 * cpu.sum_squared_residual);
}

TEST(RigidRegistration, SumsMatchReferenceTrilinearRigid) {
  expect_sums_match(Interpolation::kTrilinear, false, false, 3);
}
TEST(RigidRegistration, SumsMatchReferenceCubicIntensityMasked) {
  expect_sums_match(Interpolation::kCubic, true, true, std::random_device{}());
}
TEST(RigidRegistration, SumsMatchReferenceCubicRigid) {
  expect_sums_match(Interpolation::kCubic, false, false, std::random_device{}());
}
TEST(RigidRegistration, SumsMatchReferenceWithNanVoxels) {
  expect_sums_match(Interpolation::kCubic, true, false, std::random_device{}(), 40);
  expect_sums_match(Interpolation::kTrilinear, false, true, std::random_device{}(), 40);
}

TEST(RigidRegistration, ResliceMatchesReference) {
  const ImageHeader h = oblique_header({27, 21, 15});
  const auto vol = blobs(h, 7);
  RigidRegistration reg(test::test_device(), h);
  const Eigen::Matrix4d t = rigid_matrix({{2.2, -1.4, 0.6}, {-2.0, 1.5, 2.5}}, reg.centre());
  DeviceBuffer<float> in(test::test_device(), vol.size()), out(test::test_device(), vol.size());
  in.write(test::test_device().queue(), vol);
  for (Interpolation interp : {Interpolation::kTrilinear, Interpolation::kCubic}) {
    out.fill(test::test_device().queue(), std::nanf(""));
    reg.reslice(in, 0, t, out, interp, -1.0f);
    const auto dev = out.read_all(test::test_device().queue());
    const auto cpu = reference::reslice(vol, grid_of(h), t, -1.0, interp);
    for (size_t i = 0; i < dev.size(); ++i) ASSERT_NEAR(dev[i], cpu[i], 1e-3 + 2e-5 * std::abs(cpu[i])) << i;
  }
}

TEST(RigidRegistration, RecoversKnownTransformOnAnalyticData) {
  const ImageHeader h = oblique_header({33, 29, 23});
  const Eigen::Vector3d c = (h.affine * Eigen::Vector4d(16, 14, 11, 1)).head<3>();
  for (const RigidParams& truth :
       {RigidParams{{1.7, -2.4, 0.9}, {2.1, -1.3, 2.8}}, RigidParams{{-2.9, 0.3, -1.8}, {-0.4, 2.7, -2.2}}}) {
    const auto ref = blobs(h, 11);
    const auto mov = blobs(h, 11, rigid_matrix(truth, c), Eigen::Vector3d(0.03, -0.02, 0.04));
    RigidRegistration reg(test::test_device(), h);
    reg.set_reference(ref);
    const RegistrationResult r = reg.register_volume(mov);
    ASSERT_TRUE(r.converged) << r.failure;
    const RigidParams got = rigid_params(r.transform, c);
    std::printf("errors t %.4f %.4f %.4f mm, r %.4f %.4f %.4f deg\n", got.translation_mm[0] - truth.translation_mm[0],
                got.translation_mm[1] - truth.translation_mm[1], got.translation_mm[2] - truth.translation_mm[2],
                got.rotation_deg[0] - truth.rotation_deg[0], got.rotation_deg[1] - truth.rotation_deg[1],
                got.rotation_deg[2] - truth.rotation_deg[2]);
    for (size_t a = 0; a < 3; ++a) {
      // The bounds; the errors come from interpolating the moved copy (see the printed errors and
      // docs/algorithms/motion_correction.md).
      EXPECT_NEAR(got.translation_mm[a], truth.translation_mm[a], 0.05) << a;
      EXPECT_NEAR(got.rotation_deg[a], truth.rotation_deg[a], 0.05) << a;
    }
  }
}

// A scanner may send NaN voxels (e.g. outside a reconstruction mask): they and the neighbourhood smoothing spreads
// them to are left out of the fit, which still recovers the motion; the reference may have them too.
TEST(RigidRegistration, RecoversKnownTransformDespiteNanVoxels) {
  const ImageHeader h = oblique_header({33, 29, 23});
  const Eigen::Vector3d c = (h.affine * Eigen::Vector4d(16, 14, 11, 1)).head<3>();
  const RigidParams truth{{1.2, -0.9, 0.7}, {-1.5, 0.8, 1.9}};
  auto ref = blobs(h, 12);
  auto mov = blobs(h, 12, rigid_matrix(truth, c));
  std::mt19937 rng(std::random_device{}());
  for (int k = 0; k < 30; ++k) {
    ref[rng() % ref.size()] = std::nanf("");
    mov[rng() % mov.size()] = std::nanf("");
  }
  RigidRegistration reg(test::test_device(), h);
  reg.set_reference(ref);
  const RegistrationResult r = reg.register_volume(mov);
  ASSERT_TRUE(r.converged) << r.failure;
  const RigidParams got = rigid_params(r.transform, c);
  for (size_t a = 0; a < 3; ++a) {
    EXPECT_NEAR(got.translation_mm[a], truth.translation_mm[a], 0.05) << a;  // the bounds
    EXPECT_NEAR(got.rotation_deg[a], truth.rotation_deg[a], 0.05) << a;
  }
}

TEST(RigidRegistration, BadInputGivesClearErrorsOrAFlaggedResult) {
  const ImageHeader h = oblique_header({15, 13, 11});
  std::vector<uint8_t> empty(static_cast<size_t>(h.voxels_per_volume()), 0);
  EXPECT_THROW(RigidRegistration(test::test_device(), h, {}, empty), std::invalid_argument);
  ImageHeader flat = h;
  flat.dims = {15, 13, 2};
  EXPECT_THROW(RigidRegistration(test::test_device(), flat), std::invalid_argument);
  RigidRegistration reg(test::test_device(), h);
  EXPECT_THROW(reg.register_volume(blobs(h, 1)), std::logic_error);  // no reference yet
  reg.set_reference(blobs(h, 1));
  EXPECT_THROW(reg.register_volume(std::vector<float>(10, 1.0f)), std::invalid_argument);
  std::vector<float> all_nan(blobs(h, 1).size(), std::nanf(""));
  const RegistrationResult r = reg.register_volume(all_nan);
  EXPECT_FALSE(r.converged);
  EXPECT_NE(r.failure.find("NaN or infinite"), std::string::npos) << r.failure;
  EXPECT_EQ(r.non_finite_voxels, static_cast<int64_t>(all_nan.size()));
  const RegistrationResult flat_result = reg.register_volume(std::vector<float>(blobs(h, 1).size(), 5.0f));
  EXPECT_FALSE(flat_result.converged);  // no structure: the fit cannot be trusted and says so
  EXPECT_FALSE(flat_result.failure.empty());
  EXPECT_THROW(reg.set_reference(all_nan), std::invalid_argument);  // a NaN reference is refused...
  EXPECT_FALSE(reg.has_reference());                                // ...and leaves none set
  RegistrationOptions one_iteration;  // far from the answer with one iteration per level: flagged, not passed
  one_iteration.max_iterations = 1;
  const ImageHeader big = oblique_header({33, 29, 23});
  RigidRegistration hurried(test::test_device(), big, one_iteration);
  hurried.set_reference(blobs(big, 1));
  const RegistrationResult h_result =
      hurried.register_volume(blobs(big, 1, rigid_matrix({{2.5, -2.0, 1.0}, {2.0, 1.0, -2.5}}, hurried.centre())));
  EXPECT_FALSE(h_result.converged);
  EXPECT_NE(h_result.failure.find("did not converge"), std::string::npos) << h_result.failure;
}

}  // namespace
}  // namespace rtf
