// ctest-label: gpu
// ctest-properties: PROCESSORS 2 (PoCL registrations of a real brain fill every core)
// The mutual-information cost of linear registration: the device's joint histogram, MI and gradient against the
// double-precision reference (odd grids of different sizes and orientations, fresh random blobs, with and without a
// mask); the reference gradient against central differences of the reference MI (the derivation's check); and the
// cross-modal case it exists for: a brain whose contrast is inverted inside the head and zero outside (as an EPI
// against a T1: no monotonic map relates them) on a flipped 3 mm grid, moved by a known rigid transform, recovered
// with MI; the NCC cost on the same pair is printed beside it (docs/algorithms/registration.md).
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <Eigen/LU>
#include <cmath>
#include <random>

#include "core/io/nifti_io.hpp"
#include "core/reference/mutual_information_reference.hpp"
#include "core/registration/linear_registration.hpp"
#include "core/registration/resample.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/registration_fixtures.hpp"
#include "tests/support/synthetic_volumes.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

TEST(MutualInformation, DeviceMatchesReference) {
  std::random_device seeds;
  for (bool use_mask : {false, true}) {
    const uint32_t seed = seeds();
    SCOPED_TRACE(::testing::Message() << "seed " << seed << " mask " << use_mask);
    const test::BlobPair pair = test::blob_pair(seed);
    const auto mask = use_mask ? std::optional<std::span<const uint8_t>>(pair.mask) : std::nullopt;
    LinearRegistrationOptions options;
    options.cost = LinearCost::kMi;
    options.levels = {{2.0, 0.0}};  // stride 1 (3 mm voxels), no smoothing
    LinearRegistration reg(test::test_device(), pair.fixed, pair.moving, options, mask);
    std::vector<double> dev_hist, cpu_hist;
    const MiEvaluation dev = reg.mutual_information(0, test::perturbed_estimate(), true, &dev_hist);
    const MiEvaluation cpu =
        reference::mutual_information(pair.fixed, pair.moving, mask, reg.stride(0), test::perturbed_estimate(),
                                      reg.fixed_centre(), reg.mi_binning(), &cpu_hist);
    ASSERT_GT(cpu.count, 2000);
    // A point on the moving grid's edge, or a value on a fixed bin's edge, may fall either side in float.
    EXPECT_NEAR(static_cast<double>(dev.count), static_cast<double>(cpu.count), 1e-3 * static_cast<double>(cpu.count));
    double mass = 0.0;
    for (double h : cpu_hist) mass += h;
    // Tolerance: a point whose fixed intensity lies within float rounding of a bin edge moves its whole weight (1) to
    // the next bin (about one run in ten has such a point), so each bin may differ by two points plus float
    // accumulation; over all bins, by at most 0.1% of the points (the count's own allowance) twice.
    double l1 = 0.0;
    for (size_t i = 0; i < cpu_hist.size(); ++i) {
      EXPECT_NEAR(dev_hist[i], cpu_hist[i], 2.0 + 1e-4 * mass) << i;
      l1 += std::abs(dev_hist[i] - cpu_hist[i]);
    }
    EXPECT_LT(l1, 2.0 * std::max(1.0, 1e-3 * mass) + 1e-3 * mass);
    EXPECT_GT(cpu.mi, 0.1);
    EXPECT_NEAR(dev.mi, cpu.mi, 2e-3 * cpu.mi);
    // Tolerance: float histogram and sums; relative to the gradient's norm.
    EXPECT_LT((dev.gradient - cpu.gradient).norm(), 2e-2 * cpu.gradient.norm())
        << "device " << dev.gradient.transpose() << "\nreference " << cpu.gradient.transpose();
  }
}

TEST(MutualInformation, ReferenceGradientMatchesCentralDifferences) {
  const test::BlobPair pair = test::blob_pair(std::random_device{}());
  LinearRegistrationOptions options;
  options.cost = LinearCost::kMi;
  options.levels = {{2.0, 0.0}};
  LinearRegistration reg(test::test_device(), pair.fixed, pair.moving, options);  // for the centre and the binning
  const Eigen::Vector3d c = reg.fixed_centre();
  // Only points well inside the moving image: a point entering or leaving the overlap changes MI by a step of about
  // 1/N, which a central difference would mistake for slope.
  std::vector<uint8_t> inner(pair.fixed.data().size(), 0);
  const ImageHeader& h = pair.fixed.header();
  for (int64_t z = 0; z < h.dims[2]; ++z) {
    for (int64_t y = 0; y < h.dims[1]; ++y) {
      for (int64_t x = 0; x < h.dims[0]; ++x) {
        const Eigen::Vector4d world =
            h.affine * Eigen::Vector4d(static_cast<double>(x), static_cast<double>(y), static_cast<double>(z), 1.0);
        inner[static_cast<size_t>((z * h.dims[1] + y) * h.dims[0] + x)] = (world.head<3>() - c).norm() < 18.0;
      }
    }
  }
  const std::span<const uint8_t> mask(inner);
  const MiEvaluation at =
      reference::mutual_information(pair.fixed, pair.moving, mask, 1, test::perturbed_estimate(), c, reg.mi_binning());
  ASSERT_GT(at.count, 500);
  // T X = B (X - c) + b: perturb one entry of (B, b) at a time.
  for (int i = 0; i < 12; ++i) {
    const double step = i < 9 ? 1e-3 : 1e-2;
    auto moved = [&](double delta) {
      Eigen::Matrix4d t = test::perturbed_estimate();
      if (i < 9) {
        const int r = i / 3, col = i % 3;
        t(r, col) += delta;
        t(r, 3) -= delta * c[col];  // keep b = T c fixed
      } else {
        t(i - 9, 3) += delta;
      }
      const MiEvaluation e = reference::mutual_information(pair.fixed, pair.moving, mask, 1, t, c, reg.mi_binning());
      EXPECT_EQ(e.count, at.count);  // no point entered or left the overlap
      return e.mi;
    };
    const double numeric = (moved(step) - moved(-step)) / (2.0 * step);
    // Tolerance: the analytic gradient interpolates the central-difference image gradient, the numeric one
    // differentiates the trilinear interpolant of the image itself; on these smooth blobs they agree within 10% of the
    // gradient's largest entry.
    EXPECT_NEAR(at.gradient[i], numeric, 0.1 * at.gradient.cwiseAbs().maxCoeff()) << "entry " << i;
  }
}

TEST(MutualInformation, RecoversARigidTransformAcrossContrasts) {
  Eigen::Matrix4d truth = Eigen::Matrix4d::Identity();
  const Eigen::Vector3d c(0, -18, 18);
  truth.topLeftCorner<3, 3>() = test::rotation_about(0.1, {0.5, -1.0, 0.3});  // 5.7 degrees
  truth.topRightCorner<3, 1>() = c + Eigen::Vector3d(-5.0, 4.0, 6.0) - truth.topLeftCorner<3, 3>() * c;
  const test::CrossModalPair pair = test::cross_modal_pair(truth);
  if (pair.fixed.data().empty()) GTEST_SKIP() << test::missing_installed_data("mricron/ch2bet.nii.gz");
  const Eigen::Matrix4d start = centre_of_mass_alignment(pair.fixed, pair.moving);
  for (LinearCost cost : {LinearCost::kNcc, LinearCost::kMi}) {
    LinearRegistrationOptions options;
    options.dof = 6;
    options.cost = cost;
    options.levels = {{8.0, 8.0}, {4.0, 4.0}, {2.0, 2.0}};
    LinearRegistration reg(test::test_device(), pair.fixed, pair.moving, options);
    const LinearRegistrationResult result = reg.run(start);
    const auto [worst, mean] = test::errors_in_brain(pair.fixed, truth, result.transform);
    const bool mi = cost == LinearCost::kMi;
    std::printf("%s: %d iterations, error in brain mean %.3f mm, max %.3f mm%s\n", mi ? "MI" : "NCC", result.iterations,
                mean, worst, result.failure.empty() ? "" : (" (" + result.failure + ")").c_str());
    if (!mi) continue;  // NCC is printed for comparison (docs), not judged: inverted contrast is not its case
    ASSERT_TRUE(result.failure.empty()) << result.failure;
    EXPECT_GT(result.mi, result.initial_mi);
    // The bar for a known rigid transform across modalities: 0.5 mm.
    EXPECT_LT(mean, 0.5);
    EXPECT_LT(worst, 0.75);
  }
}

}  // namespace
}  // namespace rtf
