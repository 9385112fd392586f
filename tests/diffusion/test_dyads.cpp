// FSL's dyads from one fibre's samples: samples on one axis (either sign) give that axis and dispersion 0; samples on a
// cone of half-angle a around an axis give the axis and dispersion sin^2 a (the mean dyadic tensor is cos^2 a e e' +
// sin^2 a / 2 (I - e e')); a hand-computed case; random samples agree with Eigen's eigen-decomposition of the mean
// tensor built here independently; strided reads.
// ctest-label: unit
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <Eigen/Geometry>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "core/diffusion/dyads.hpp"

namespace rtf {
namespace {

constexpr double kPi = std::numbers::pi;

void to_angles(const Eigen::Vector3d& v, float& th, float& ph) {
  th = static_cast<float>(std::acos(std::clamp(v.z(), -1.0, 1.0)));
  ph = static_cast<float>(std::atan2(v.y(), v.x()));
}

double axis_angle_deg(const std::array<double, 3>& a, const Eigen::Vector3d& b) {
  const double dot = std::abs(a[0] * b.x() + a[1] * b.y() + a[2] * b.z());
  return std::acos(std::min(1.0, dot)) * 180.0 / kPi;
}

TEST(Dyads, SamplesOnOneAxisOfEitherSign) {
  const Eigen::Vector3d axis = Eigen::Vector3d(0.3, -0.5, 0.8).normalized();
  std::vector<float> th(10), ph(10);
  for (size_t k = 0; k < th.size(); ++k) to_angles(k % 3 == 0 ? -axis : axis, th[k], ph[k]);
  const Dyad dyad = mean_dyad(th.data(), ph.data(), 10);
  EXPECT_LT(axis_angle_deg(dyad.vector, axis), 1e-3);  // float angles: ~1e-7 rad
  EXPECT_NEAR(dyad.dispersion, 0.0, 1e-6);
  EXPECT_GT(dyad.vector[2], 0.0);  // the sign convention: z > 0
  EXPECT_NEAR(std::hypot(dyad.vector[0], dyad.vector[1], dyad.vector[2]), 1.0, 1e-12);
}

TEST(Dyads, ConeAroundAnAxisGivesAnalyticDispersion) {
  const Eigen::Vector3d axis = Eigen::Vector3d(-0.6, 0.2, 0.4).normalized();
  const Eigen::Vector3d u = axis.unitOrthogonal(), w = axis.cross(u);
  for (double a : {0.1, 0.4, 0.8}) {
    const int n = 36;  // evenly spaced azimuths: the off-axis terms cancel exactly
    std::vector<float> th(n), ph(n);
    for (int k = 0; k < n; ++k) {
      const double psi = 2 * kPi * k / n;
      const Eigen::Vector3d v = std::cos(a) * axis + std::sin(a) * (std::cos(psi) * u + std::sin(psi) * w);
      to_angles(k % 2 ? v : -v, th[static_cast<size_t>(k)], ph[static_cast<size_t>(k)]);
    }
    const Dyad dyad = mean_dyad(th.data(), ph.data(), n);
    EXPECT_LT(axis_angle_deg(dyad.vector, axis), 1e-3) << a;
    EXPECT_NEAR(dyad.dispersion, std::sin(a) * std::sin(a), 1e-6) << a;
  }
}

TEST(Dyads, HandComputedCase) {
  // x, x, y: M = diag(2/3, 1/3, 0), so the dyad is x and the dispersion 1/3.
  const std::vector<float> th = {static_cast<float>(kPi / 2), static_cast<float>(kPi / 2), static_cast<float>(kPi / 2)};
  const std::vector<float> ph = {0.0f, static_cast<float>(kPi), static_cast<float>(kPi / 2)};
  const Dyad dyad = mean_dyad(th.data(), ph.data(), 3);
  EXPECT_NEAR(std::abs(dyad.vector[0]), 1.0, 1e-6);
  EXPECT_GT(dyad.vector[0], 0.0);  // z and y ~0: the sign is x's
  EXPECT_NEAR(dyad.dispersion, 1.0 / 3.0, 1e-6);
}

TEST(Dyads, RandomSamplesMatchAnIndependentEigenDecomposition) {
  std::mt19937_64 generator(99);
  std::normal_distribution<double> normal;
  const Eigen::Vector3d axis = Eigen::Vector3d(0.1, 0.9, -0.3).normalized();
  const int n = 250, stride = 3;
  std::vector<float> th(static_cast<size_t>(n * stride), 99.0f), ph(static_cast<size_t>(n * stride), 99.0f);
  Eigen::Matrix3d m = Eigen::Matrix3d::Zero();
  for (int k = 0; k < n; ++k) {
    const Eigen::Vector3d v =
        (axis + 0.3 * Eigen::Vector3d(normal(generator), normal(generator), normal(generator))).normalized();
    const auto i = static_cast<size_t>(k * stride);
    to_angles(v, th[i], ph[i]);
    // The reference tensor from the float angles actually stored.
    const double t = th[i], p = ph[i];
    const Eigen::Vector3d e(std::sin(t) * std::cos(p), std::sin(t) * std::sin(p), std::cos(t));
    m += e * e.transpose() / n;
  }
  const Eigen::EigenSolver<Eigen::Matrix3d> reference(m);  // the general solver, not the one mean_dyad uses
  int largest = 0;
  for (int k = 1; k < 3; ++k) {
    if (reference.eigenvalues()(k).real() > reference.eigenvalues()(largest).real()) largest = k;
  }
  const Eigen::Vector3d expected = reference.eigenvectors().col(largest).real().normalized();
  const Dyad dyad = mean_dyad(th.data(), ph.data(), n, stride);
  EXPECT_LT(axis_angle_deg(dyad.vector, expected), 1e-6);
  EXPECT_NEAR(dyad.dispersion, 1.0 - reference.eigenvalues()(largest).real(), 1e-12);
  EXPECT_LT(axis_angle_deg(dyad.vector, axis), 5.0);
  EXPECT_GT(dyad.dispersion, 0.02);
  EXPECT_LT(dyad.dispersion, 0.2);
}

TEST(Dyads, RejectsNoSamples) {
  const float x = 0;
  EXPECT_THROW(mean_dyad(&x, &x, 0), std::invalid_argument);
  EXPECT_THROW(mean_dyad(&x, &x, 1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
