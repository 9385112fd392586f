// ctest-label: gpu
// The deformation-field kernels (kernels/deformation.cl through DeformationOps) against the double-precision reference
// (core/reference/deformation_reference.hpp) on odd grids with fresh random smooth fields and volumes: composition,
// exponentiation by scaling and squaring, warping, the local-correlation and demons forces, the update, the largest
// norm, the Jacobian determinant and the change of units. Outputs are poisoned before each run.
#include <gtest/gtest.h>

#include <Eigen/LU>
#include <cmath>
#include <random>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/filters/gaussian_smoothing.hpp"
#include "core/reference/deformation_reference.hpp"
#include "core/registration/deformation_ops.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

using reference::Dims;

constexpr float kPoison = -12345.0f;

size_t count_of(const Dims& d) {
  return static_cast<size_t>(d[0] * d[1] * d[2]);
}

// A smooth random field: per component a sum of three random sinusoids, scaled so that its largest vector is about
// `amplitude` voxels.
std::vector<float> smooth_field(const Dims& d, std::mt19937& rng, double amplitude) {
  const size_t n = count_of(d);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<float> f(3 * n);
  for (size_t c = 0; c < 3; ++c) {
    double k[3][3], phase[3], a[3];
    for (auto& row : k) {
      for (double& x : row) x = 0.3 * u(rng);
    }
    for (int s = 0; s < 3; ++s) {
      phase[s] = 3.0 * u(rng);
      a[s] = u(rng);
    }
    for (size_t i = 0; i < n; ++i) {
      const double x = static_cast<double>(i % static_cast<size_t>(d[0]));
      const double y = static_cast<double>((i / static_cast<size_t>(d[0])) % static_cast<size_t>(d[1]));
      const double z = static_cast<double>(i / static_cast<size_t>(d[0] * d[1]));
      double v = 0.0;
      for (int s = 0; s < 3; ++s) v += a[s] * std::sin(k[s][0] * x + k[s][1] * y + k[s][2] * z + phase[s]);
      f[c * n + i] = static_cast<float>(amplitude / 3.0 * v);
    }
  }
  return f;
}

std::vector<float> random_volume(size_t n, std::mt19937& rng, float lo = 0.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// A smooth volume in [0, 1] with some texture: blobs plus noise.
std::vector<float> textured_volume(const Dims& d, std::mt19937& rng) {
  const size_t n = count_of(d);
  const std::vector<float> f = smooth_field(d, rng, 3.0);
  std::uniform_real_distribution<float> noise(-0.05f, 0.05f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.5f + 0.15f * (f[i] + f[n + i] * f[2 * n + i]) + noise(rng);
  return v;
}

DeviceBuffer<float> upload(const std::vector<float>& host) {
  Device& device = test::test_device();
  DeviceBuffer<float> b(device, host.size());
  b.write(device.queue(), host);
  return b;
}

DeviceBuffer<float> poisoned(size_t n) {
  Device& device = test::test_device();
  DeviceBuffer<float> b(device, n);
  b.fill(device.queue(), kPoison);
  return b;
}

std::vector<float> download(const DeviceBuffer<float>& b) {
  return b.read_all(test::test_device().queue());
}

// Counts the elements whose difference exceeds `tol`; checks that nothing stayed poisoned.
int64_t mismatches(const std::vector<float>& dev, const std::vector<double>& ref, double tol, double* worst = nullptr) {
  EXPECT_EQ(dev.size(), ref.size());
  int64_t bad = 0;
  double w = 0.0;
  for (size_t i = 0; i < std::min(dev.size(), ref.size()); ++i) {
    EXPECT_NE(dev[i], kPoison) << "element " << i << " not written";
    const double e = std::abs(static_cast<double>(dev[i]) - ref[i]);
    w = std::max(w, e);
    if (!(e <= tol)) ++bad;
  }
  if (worst) *worst = w;
  return bad;
}

class DeformationOpsTest : public ::testing::TestWithParam<Dims> {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
  }
  uint32_t seed_ = 0;
  std::mt19937 rng_;
};

TEST_P(DeformationOpsTest, ComposeMatchesReference) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed_);
  const Dims d = GetParam();
  const size_t n = count_of(d);
  const auto a = smooth_field(d, rng_, 2.5), b = smooth_field(d, rng_, 2.5);
  DeformationOps ops(test::test_device(), d);
  auto da = upload(a), db = upload(b);
  auto out = poisoned(3 * n);
  ops.compose(da, db, out, 0.75f);
  const auto ref = reference::compose_fields(a, b, d, 0.75);
  // Tolerance: positions and weights in float (~1e-6 voxel) move a sample of a field with slopes below 1 by < 1e-5
  // (the field continues beyond the grid as its edge values: no jump at the edges).
  double worst = 0.0;
  EXPECT_EQ(mismatches(download(out), ref, 1e-4, &worst), 0) << "worst " << worst;
}

TEST_P(DeformationOpsTest, ExponentialMatchesReference) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed_);
  const Dims d = GetParam();
  const size_t n = count_of(d);
  const auto v = smooth_field(d, rng_, 3.0);
  DeformationOps ops(test::test_device(), d);
  auto dv = upload(v);
  for (int k : {0, 1, 4, 5}) {
    auto u = poisoned(3 * n), scratch = poisoned(3 * n);
    ops.exponential(dv, u, scratch, k);
    const auto ref = reference::field_exponential(v, d, k);
    // Tolerance: each squaring adds the float sampling error (~1e-5 voxel) and carries the previous error with the
    // field's slope (< 1 here): 1e-3 voxel after 5 squarings.
    double worst = 0.0;
    EXPECT_EQ(mismatches(download(u), ref, 1e-3, &worst), 0) << k << " squarings, worst " << worst;
  }
  EXPECT_EQ(DeformationOps::squarings_for(0.0), 2);
  EXPECT_EQ(DeformationOps::squarings_for(1.9), 2);
  EXPECT_EQ(DeformationOps::squarings_for(2.1), 3);
  EXPECT_EQ(DeformationOps::squarings_for(40.0), 7);
}

TEST_P(DeformationOpsTest, ExponentialOfTheNegatedFieldInvertsIt) {
  // exp(-v) o exp(v) = id up to the discretisation: a check of the exponential itself, not of the device.
  SCOPED_TRACE(::testing::Message() << "seed " << seed_);
  const Dims d = GetParam();
  const size_t n = count_of(d);
  auto v = smooth_field(d, rng_, 1.0);
  std::vector<float> minus(v.size());
  for (size_t i = 0; i < v.size(); ++i) minus[i] = -v[i];
  DeformationOps ops(test::test_device(), d);
  auto dv = upload(v), dm = upload(minus);
  auto u = poisoned(3 * n), w = poisoned(3 * n), scratch = poisoned(3 * n), both = poisoned(3 * n);
  ops.exponential(dv, u, scratch, 6);
  ops.exponential(dm, w, scratch, 6);
  ops.compose(u, w, both, 1.0f);  // (id + w) o (id + u)
  const auto r = download(both);
  // Interior voxels (two voxels from the faces, away from the edge extension): the residual of the inverse is second
  // order in the field's slope times the grid step, well below 0.1 voxel here.
  double worst = 0.0;
  for (int64_t z = 2; z + 2 < d[2]; ++z) {
    for (int64_t y = 2; y + 2 < d[1]; ++y) {
      for (int64_t x = 2; x + 2 < d[0]; ++x) {
        const auto i = static_cast<size_t>((z * d[1] + y) * d[0] + x);
        worst = std::max(worst, static_cast<double>(std::hypot(r[i], r[n + i], r[2 * n + i])));
      }
    }
  }
  EXPECT_LT(worst, 0.1);
}

TEST_P(DeformationOpsTest, WarpMatchesReference) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed_);
  const Dims d = GetParam();
  const size_t n = count_of(d);
  const auto moving = random_volume(n, rng_), fixed = random_volume(n, rng_);
  const auto u = smooth_field(d, rng_, 2.0);
  DeformationOps ops(test::test_device(), d);
  auto dm = upload(moving), df = upload(fixed), du = upload(u);
  auto moments = poisoned(3 * n);
  ops.warp_moments(dm, df, du, moments);
  const auto j = reference::warp_volume(moving, u, d);
  std::vector<double> ref(3 * n);
  for (size_t i = 0; i < n; ++i) {
    ref[i] = j[i];
    ref[n + i] = j[i] * j[i];
    ref[2 * n + i] = fixed[i] * j[i];
  }
  // Tolerance: float positions and weights on data in [0, 1] with slopes up to 1 per voxel: 1e-5; edge crossings.
  EXPECT_LE(mismatches(download(moments), ref, 2e-5), static_cast<int64_t>(3 * n / 500));
}

TEST_P(DeformationOpsTest, LnccForceMatchesReference) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed_);
  const Dims d = GetParam();
  const size_t n = count_of(d);
  const auto fixed = textured_volume(d, rng_);
  auto warped = textured_volume(d, rng_);
  for (size_t i = 0; i < n; ++i) warped[i] = 0.6f * warped[i] + 0.3f * fixed[i];  // correlated, not equal
  Device& device = test::test_device();
  DeformationOps ops(device, d);
  SmoothingSpec window;
  window.fwhm_mm = 3.5;
  GaussianSmoother smoother(device, d, {1.0, 1.0, 1.0}, window, std::nullopt, 3);
  auto df = upload(fixed), dj = upload(warped);
  auto fixed_moments = poisoned(2 * n), fixed_local = poisoned(2 * n);
  ops.fixed_moments(df, fixed_moments);
  smoother.enqueue(fixed_moments, fixed_local, 2);
  // moments = [J, J^2, F J] from the identity warp of J onto itself.
  auto zero = upload(std::vector<float>(3 * n, 0.0f));
  auto moments = poisoned(3 * n), local = poisoned(3 * n), force = poisoned(3 * n), cc = poisoned(n);
  ops.warp_moments(dj, df, zero, moments);
  smoother.enqueue(moments, local, 3);
  const float eps = 1e-5f;
  ops.lncc_force(df, moments, local, fixed_local, eps, 2.0f * eps, force, cc);
  const auto ref = reference::lncc_force(fixed, warped, d, smoother.taps(), eps, 2.0 * eps);
  double largest = 0.0;
  for (double f : ref.force) largest = std::max(largest, std::abs(f));
  ASSERT_GT(largest, 0.0);
  // Tolerance: the local variances are differences of window means in float (data ~0.5, variances ~1e-3: ~1e-4
  // relative), so forces agree within 1e-3 of the largest force and cc within 1e-3.
  double worst_force = 0.0, worst_cc = 0.0;
  EXPECT_EQ(mismatches(download(force), ref.force, 1e-3 * largest, &worst_force), 0) << "largest " << largest;
  EXPECT_EQ(mismatches(download(cc), ref.cc, 1e-3, &worst_cc), 0);
  double mean_cc = 0.0;
  for (double c : ref.cc) mean_cc += c / static_cast<double>(n);
  // The test exercises correlated windows, not only the eps guard (which gives cc ~ 0): a clean CI run saw a mean of
  // 0.043 on the 13 x 11 x 9 grid (seed 3566134251), so the bound is 0.02.
  EXPECT_GT(mean_cc, 0.02);
  EXPECT_LT(mean_cc, 0.99);
}

TEST_P(DeformationOpsTest, DemonsForceMatchesReference) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed_);
  const Dims d = GetParam();
  const size_t n = count_of(d);
  const auto fixed = textured_volume(d, rng_), warped = textured_volume(d, rng_);
  DeformationOps ops(test::test_device(), d);
  auto df = upload(fixed), dj = upload(warped);
  auto force = poisoned(3 * n), cost = poisoned(n);
  ops.demons_force(df, dj, 2.0f, force, cost);
  const auto ref = reference::demons_force(fixed, warped, d, 2.0);
  double largest = 0.0;
  for (double f : ref.force) largest = std::max(largest, std::abs(f));
  // Tolerance: one quotient of float differences of data in [0, 1]: 1e-4 of the largest force.
  EXPECT_EQ(mismatches(download(force), ref.force, 1e-4 * largest), 0);
  EXPECT_EQ(mismatches(download(cost), ref.cost, 1e-6), 0);
}

TEST_P(DeformationOpsTest, UpdateNormJacobianAndUnits) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed_);
  const Dims d = GetParam();
  const size_t n = count_of(d);
  const auto v = smooth_field(d, rng_, 1.5), f = smooth_field(d, rng_, 1.0);
  DeformationOps ops(test::test_device(), d);
  auto dv = upload(v), dfield = upload(f);
  ops.add_scaled(dv, dfield, -0.3f);
  std::vector<double> sum(3 * n);
  for (size_t i = 0; i < 3 * n; ++i) sum[i] = static_cast<double>(v[i]) - 0.3 * static_cast<double>(f[i]);
  EXPECT_EQ(mismatches(download(dv), sum, 1e-6), 0);

  double largest = 0.0;
  for (size_t i = 0; i < n; ++i) largest = std::max(largest, std::hypot(sum[i], sum[n + i], sum[2 * n + i]));
  EXPECT_NEAR(ops.max_norm(dv), largest, 1e-5 * largest);

  // The capped update on the device: v + min(gain, step / max|f|) f, once with the gain and once with the cap active.
  double largest_f = 0.0;
  for (size_t i = 0; i < n; ++i)
    largest_f = std::max(largest_f, static_cast<double>(std::hypot(f[i], f[n + i], f[2 * n + i])));
  for (const float gain : {0.01f, 10.0f}) {
    auto dv2 = upload(v);
    ops.add_capped(dv2, dfield, gain, 0.25f);
    const double g = std::min(static_cast<double>(gain), 0.25 / largest_f);
    std::vector<double> capped(3 * n);
    for (size_t i = 0; i < 3 * n; ++i) capped[i] = static_cast<double>(v[i]) + g * static_cast<double>(f[i]);
    EXPECT_EQ(mismatches(download(dv2), capped, 1e-5), 0) << "gain " << gain;
  }

  const auto summed = download(dv);
  auto det = poisoned(n);
  ops.jacobian(dv, det);
  // Tolerance: differences of float values ~1 and a 3x3 determinant: 1e-5.
  EXPECT_EQ(mismatches(download(det), reference::jacobian_determinant(summed, d), 1e-5), 0);

  Eigen::Matrix3d m;
  m << 1.5, 0.2, -0.1, 0.0, -1.0, 0.3, 0.25, 0.0, 2.0;
  auto out = poisoned(3 * n);
  ops.transform_vectors(dv, out, m);
  std::vector<double> ref(3 * n);
  for (size_t i = 0; i < n; ++i) {
    const Eigen::Vector3d r = m * Eigen::Vector3d(summed[i], summed[n + i], summed[2 * n + i]);
    for (size_t c = 0; c < 3; ++c) ref[c * n + i] = r[static_cast<int>(c)];
  }
  EXPECT_EQ(mismatches(download(out), ref, 1e-5), 0);
}

TEST_P(DeformationOpsTest, WarpCheckIntensityAndIndicatorMatchReference) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed_);
  const Dims d = GetParam();
  const size_t n = count_of(d);
  DeformationOps ops(test::test_device(), d);
  // A Jacobian with some folded voxels, a residual field, a mask image with a third of the voxels outside.
  auto det = random_volume(n, rng_, -0.3f, 2.0f);
  const auto residual = smooth_field(d, rng_, 1.0);
  auto mask = random_volume(n, rng_, -1.0f, 2.0f);
  auto ddet = upload(det), dres = upload(residual), dmask = upload(mask);
  const WarpCheck c = ops.warp_check(ddet, dres, dmask);
  const reference::WarpCheck r = reference::warp_check(det, residual, mask);
  EXPECT_GT(r.folded_in_mask, 0);
  EXPECT_GT(r.folded, r.folded_in_mask);
  EXPECT_EQ(c.min_det, r.min_det);  // a minimum and a maximum of floats are exact
  EXPECT_EQ(c.max_det, r.max_det);
  EXPECT_EQ(c.folded, r.folded);
  EXPECT_EQ(c.folded_in_mask, r.folded_in_mask);
  EXPECT_EQ(c.in_mask, r.in_mask);
  EXPECT_NEAR(c.max_residual, r.max_residual, 1e-6 * r.max_residual);     // one float length
  EXPECT_NEAR(c.mean_residual, r.mean_residual, 1e-5 * r.mean_residual);  // float partial sums of < 2,000 terms

  // v = a v + b where v != 0.
  std::vector<float> v = random_volume(n, rng_, 0.0f, 3.0f);
  for (size_t i = 0; i < n; i += 3) v[i] = 0.0f;
  auto dv = upload(v);
  ops.scale_intensity(dv, 1.5f, -0.25f);
  std::vector<double> ref(n);
  for (size_t i = 0; i < n; ++i) ref[i] = v[i] != 0.0f ? 1.5 * v[i] - 0.25 : 0.0;
  EXPECT_EQ(mismatches(download(dv), ref, 1e-6), 0);

  // The voxels whose local variance (from [mean, mean of squares]) exceeds eps.
  std::vector<float> means(2 * n);
  for (size_t i = 0; i < n; ++i) {
    means[i] = v[i];
    means[n + i] = v[i] * v[i] + (i % 2 == 0 ? 0.5f : 1e-6f);
  }
  auto dmeans = upload(means);
  auto out = poisoned(n);
  ops.variance_indicator(dmeans, 1e-3f, out);
  std::vector<double> expected(n);
  for (size_t i = 0; i < n; ++i) expected[i] = i % 2 == 0 ? 1.0 : 0.0;
  EXPECT_EQ(mismatches(download(out), expected, 0.0), 0);
}

INSTANTIATE_TEST_SUITE_P(OddGrids, DeformationOpsTest,
                         ::testing::Values(Dims{13, 11, 9}, Dims{17, 12, 10}, Dims{9, 15, 7}),
                         [](const ::testing::TestParamInfo<Dims>& p) {
                           return std::to_string(p.param[0]) + "x" + std::to_string(p.param[1]) + "x" +
                                  std::to_string(p.param[2]);
                         });

TEST(DeformationOps, JacobianOfAnAffineFieldIsItsDeterminant) {
  // u(x) = (A - I) x: det(I + Du) = det(A) at every voxel, an analytic answer.
  const Dims d{11, 10, 9};
  const size_t n = count_of(d);
  Eigen::Matrix3d a;
  a << 1.1, 0.1, 0.0, -0.05, 0.9, 0.2, 0.0, 0.1, 1.2;
  std::vector<float> u(3 * n);
  for (size_t i = 0; i < n; ++i) {
    const Eigen::Vector3d x(static_cast<double>(i % 11), static_cast<double>((i / 11) % 10),
                            static_cast<double>(i / 110));
    const Eigen::Vector3d d3 = (a - Eigen::Matrix3d::Identity()) * x;
    for (size_t c = 0; c < 3; ++c) u[c * n + i] = static_cast<float>(d3[static_cast<int>(c)]);
  }
  DeformationOps ops(test::test_device(), d);
  auto du = upload(u);
  auto det = poisoned(n);
  ops.jacobian(du, det);
  for (float v : download(det)) ASSERT_NEAR(v, a.determinant(), 1e-4);
}

TEST(DeformationOps, RejectsWrongSizesAndAliasing) {
  const Dims d{5, 5, 5};
  DeformationOps ops(test::test_device(), d);
  auto small = upload(std::vector<float>(100, 0.0f));
  auto field = upload(std::vector<float>(375, 0.0f));
  auto out = upload(std::vector<float>(375, 0.0f));
  EXPECT_THROW(ops.compose(small, field, out, 1.0f), std::invalid_argument);
  EXPECT_THROW(ops.warp_check(small, field, small), std::invalid_argument);
  EXPECT_THROW(ops.compose(field, field, field, 1.0f), std::invalid_argument);
  EXPECT_THROW(DeformationOps(test::test_device(), {0, 5, 5}), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
