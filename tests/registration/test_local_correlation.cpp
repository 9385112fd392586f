// ctest-label: gpu
// ctest-properties: PROCESSORS 2 (PoCL registrations of a real brain fill every core)
// The local-correlation (LNCC) cost of linear registration: the device's value and gradient against the
// double-precision reference (odd grids of different sizes and orientations, fresh random blobs related by a square
// root, with and without a mask, strides 1 and 2); the reference's exact gradient against central differences of the
// reference value (the derivation's check); and the cross-modal case beside MI: Colin27 against its inverted contrast
// on a flipped 3 mm grid, moved by a known rigid transform (docs/algorithms/registration.md, "Which cost").
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "core/reference/linear_lncc_reference.hpp"
#include "core/registration/linear_registration.hpp"
#include "tests/support/registration_fixtures.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

LinearRegistrationOptions lncc_options(double spacing_mm) {
  LinearRegistrationOptions options;
  options.cost = LinearCost::kLncc;
  options.levels = {{spacing_mm, 0.0}};  // no smoothing: the reference sees the same images
  options.lncc_window_voxels = 3.0;
  return options;
}

TEST(LocalCorrelation, DeviceMatchesReference) {
  std::random_device seeds;
  for (bool use_mask : {false, true}) {
    for (double spacing : {3.0, 6.0}) {  // strides 1 and 2 on the 3 mm fixed grid
      const uint32_t seed = seeds();
      SCOPED_TRACE(::testing::Message() << "seed " << seed << " mask " << use_mask << " spacing " << spacing);
      const test::BlobPair pair = test::blob_pair(seed);
      const auto mask = use_mask ? std::optional<std::span<const uint8_t>>(pair.mask) : std::nullopt;
      LinearRegistration reg(test::test_device(), pair.fixed, pair.moving, lncc_options(spacing), mask);
      const MiEvaluation dev = reg.local_correlation(0, test::perturbed_estimate());
      const auto [eps_f, eps_m] = reg.lncc_eps();
      const MiEvaluation cpu =
          reference::local_correlation(pair.fixed, pair.moving, mask, reg.stride(0), test::perturbed_estimate(),
                                       reg.fixed_centre(), reg.lncc_window_taps(), eps_f, eps_m);
      ASSERT_GT(cpu.count, spacing > 3.0 ? 150 : 1500);
      // A point on the moving grid's edge may fall either side in float, and every window around it with it.
      EXPECT_NEAR(static_cast<double>(dev.count), static_cast<double>(cpu.count),
                  0.02 * static_cast<double>(cpu.count));
      EXPECT_GT(cpu.mi, 0.1);
      // Tolerance: the local variances are differences of float window means (relative ~1e-5), summed in float.
      EXPECT_NEAR(dev.mi, cpu.mi, 5e-3 * cpu.mi);
      EXPECT_LT((dev.gradient - cpu.gradient).norm(), 3e-2 * cpu.gradient.norm())
          << "device " << dev.gradient.transpose() << "\nreference " << cpu.gradient.transpose();
    }
  }
}

TEST(LocalCorrelation, ReferenceGradientMatchesCentralDifferences) {
  // RTF_TEST_SEED reproduces a failure's printed seed.
  const uint32_t seed = std::getenv("RTF_TEST_SEED") ? static_cast<uint32_t>(std::stoul(std::getenv("RTF_TEST_SEED")))
                                                     : std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const test::BlobPair pair = test::blob_pair(seed);
  LinearRegistration reg(test::test_device(), pair.fixed, pair.moving, lncc_options(3.0));
  reg.local_correlation(0, Eigen::Matrix4d::Identity());  // prepares the level (the window's taps)
  const Eigen::Vector3d c = reg.fixed_centre();
  const auto [eps_f, eps_m] = reg.lncc_eps();
  // Only points well inside the moving image (a mask of a ball about the centre): points entering or leaving the
  // overlap change the count and the windows by steps a central difference would take for slope.
  std::vector<uint8_t> inner(pair.fixed.data().size(), 0);
  const ImageHeader& h = pair.fixed.header();
  for (int64_t z = 0; z < h.dims[2]; ++z) {
    for (int64_t y = 0; y < h.dims[1]; ++y) {
      for (int64_t x = 0; x < h.dims[0]; ++x) {
        const Eigen::Vector4d world =
            h.affine * Eigen::Vector4d(static_cast<double>(x), static_cast<double>(y), static_cast<double>(z), 1.0);
        inner[static_cast<size_t>((z * h.dims[1] + y) * h.dims[0] + x)] = (world.head<3>() - c).norm() < 15.0;
      }
    }
  }
  const std::span<const uint8_t> mask(inner);
  const auto evaluate = [&](const Eigen::Matrix4d& t) {
    return reference::local_correlation(pair.fixed, pair.moving, mask, 1, t, c, reg.lncc_window_taps(), eps_f, eps_m);
  };
  const MiEvaluation at = evaluate(test::perturbed_estimate());
  ASSERT_GT(at.count, 300);
  // The trilinear interpolant makes the cost piecewise smooth: a central difference over a small step picks up its
  // kinks (on a 3.5 mm moving axis, by up to half the entry), while the analytic gradient interpolates the image's
  // central-difference gradient, a smooth function. So each entry is differenced at two steps (h and 3h): their mean is
  // the numeric derivative and their disagreement, the kinks' share, widens the tolerance of that entry only. A wrong
  // derivation (a missing term, a sign, a factor) shows on smooth entries, where the two steps agree.
  Eigen::VectorXd numeric(12);
  for (int i = 0; i < 12; ++i) {
    auto moved = [&](double delta) {
      Eigen::Matrix4d t = test::perturbed_estimate();
      if (i < 9) {
        const int r = i / 3, col = i % 3;
        t(r, col) += delta;
        t(r, 3) -= delta * c[col];  // keep b = T c fixed
      } else {
        t(i - 9, 3) += delta;
      }
      const MiEvaluation e = evaluate(t);
      EXPECT_EQ(e.count, at.count);  // no point entered or left the counted set
      return e.mi;
    };
    const double step = i < 9 ? 1e-3 : 1e-2;
    const double small = (moved(step) - moved(-step)) / (2.0 * step);
    const double large = (moved(3.0 * step) - moved(-3.0 * step)) / (6.0 * step);
    numeric[i] = 0.5 * (small + large);
    std::printf("entry %2d: analytic %+.5f, central differences %+.5f (h) %+.5f (3h)\n", i, at.gradient[i], small,
                large);
    // Tolerance: 10% of the gradient's largest entry, plus twice the two differences' disagreement (the kinks' errors
    // at h and 3h are correlated, so their mean can be off by more than their difference: seed 565016196 had an entry
    // off by 1.02 x the bound with the disagreement counted once).
    EXPECT_NEAR(at.gradient[i], numeric[i], 0.1 * at.gradient.cwiseAbs().maxCoeff() + 2.0 * std::abs(small - large))
        << "entry " << i;
  }
  // The whole gradient points the same way (a direction wrong in a few entries shows here).
  EXPECT_GT(at.gradient.dot(numeric) / (at.gradient.norm() * numeric.norm()), 0.97);
}

// The cross-modal pair, optionally with a smooth multiplicative bias field on the moving image (EPI receive-coil
// shading: 1 +- 40% across the head), registered with LNCC and, for comparison, MI.
void register_across_contrasts(bool bias) {
  Eigen::Matrix4d truth = Eigen::Matrix4d::Identity();
  const Eigen::Vector3d c(0, -18, 18);
  truth.topLeftCorner<3, 3>() = test::rotation_about(0.1, {0.5, -1.0, 0.3});  // 5.7 degrees
  truth.topRightCorner<3, 1>() = c + Eigen::Vector3d(-5.0, 4.0, 6.0) - truth.topLeftCorner<3, 3>() * c;
  test::CrossModalPair pair = test::cross_modal_pair(truth);
  if (pair.fixed.data().empty()) GTEST_SKIP() << "Colin27 (mricron/ch2bet.nii.gz) is not installed";
  if (bias) {
    const ImageHeader& h = pair.moving.header();
    for (int64_t z = 0; z < h.dims[2]; ++z) {
      for (int64_t y = 0; y < h.dims[1]; ++y) {
        for (int64_t x = 0; x < h.dims[0]; ++x) {
          const Eigen::Vector3d w =
              (h.affine * Eigen::Vector4d(static_cast<double>(x), static_cast<double>(y), static_cast<double>(z), 1.0))
                  .head<3>() -
              c;
          pair.moving.at(x, y, z) *= static_cast<float>(1.0 + 0.4 * std::tanh((0.6 * w.x() + 0.8 * w.y()) / 60.0));
        }
      }
    }
  }
  for (LinearCost cost : {LinearCost::kMi, LinearCost::kLncc}) {
    LinearRegistrationOptions options;
    options.dof = 6;
    options.cost = cost;
    options.levels = {{8.0, 8.0}, {4.0, 4.0}, {2.0, 2.0}};
    LinearRegistration reg(test::test_device(), pair.fixed, pair.moving, options);
    const LinearRegistrationResult result = reg.run(centre_of_mass_alignment(pair.fixed, pair.moving));
    ASSERT_TRUE(result.failure.empty()) << result.failure;
    const auto [worst, mean] = test::errors_in_brain(pair.fixed, truth, result.transform);
    const bool lncc = cost == LinearCost::kLncc;
    std::printf("%s%s: %d iterations, error in brain mean %.3f mm, max %.3f mm\n", lncc ? "LNCC" : "MI",
                bias ? " (bias field)" : "", result.iterations, mean, worst);
    // The bar for a known rigid transform across modalities: 0.5 mm (MI is judged in its own test).
    if (!lncc) continue;
    EXPECT_LT(mean, 0.5);
    EXPECT_LT(worst, 0.75);
  }
}

TEST(LocalCorrelation, RecoversARigidTransformAcrossContrasts) {
  register_across_contrasts(false);
}

TEST(LocalCorrelation, RecoversARigidTransformAcrossContrastsWithABiasField) {
  register_across_contrasts(true);
}

}  // namespace
}  // namespace rtf
