// The initialisation before the ball-and-stick MCMC: the log-linear tensor fit recovers a known tensor exactly; the
// Levenberg-Marquardt fit recovers noiseless ball-and-stick voxels (1 fibre; 90-, 60- and 30-degree crossings; three
// fibres; model 2) to ~1e-12 and noisy ones (SNR 30) to a few degrees; mcmc_ready yields valid sampler states;
// initialise_ball_stick flags voxels it cannot fit, estimates tau = 1 / sigma^2 on noisy data and does not depend on
// the threads. Lines "[ measured ]" print the accuracies reached.
// ctest-label: unit
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "core/diffusion/ball_stick_init.hpp"
#include "core/diffusion/ball_stick_signal.hpp"
#include "core/diffusion/synthetic_dwi.hpp"

namespace rtf {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kDeg = kPi / 180.0;

// Angle in degrees between the axes of two directions (v and -v are one fibre).
double axis_angle_deg(const std::array<double, 3>& a, const std::array<double, 3>& b) {
  const double dot = std::abs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2]);
  return std::acos(std::min(1.0, dot)) / kDeg;
}

std::array<double, 3> direction(const BallStickParams& p, int j) {
  return fibre_direction(p.th[static_cast<size_t>(j)], p.ph[static_cast<size_t>(j)]);
}

// A voxel of `fibres` sticks in the plane through the axis (th0, ph0), `crossing_deg` apart, fractions f.
BallStickParams crossing(double th0, double ph0, double crossing_deg, std::vector<double> f, double d = 1.2e-3) {
  BallStickParams p;
  p.s0 = 1000;
  p.d = d;
  for (size_t j = 0; j < f.size(); ++j) p.f[j] = f[j];
  p.th[0] = th0;
  p.ph[0] = ph0;
  if (f.size() > 1) {
    // Rotate the first stick by the crossing angle about an axis perpendicular to it.
    const std::array<double, 3> v = fibre_direction(th0, ph0);
    const Eigen::Vector3d e(v[0], v[1], v[2]);
    const Eigen::Vector3d normal = e.unitOrthogonal();
    const Eigen::Vector3d w = Eigen::AngleAxisd(crossing_deg * kDeg, normal) * e;
    p.th[1] = std::acos(w.z());
    p.ph[1] = std::atan2(w.y(), w.x());
    if (f.size() > 2) {  // the third perpendicular to both
      const Eigen::Vector3d u = e.cross(w).normalized();
      p.th[2] = std::acos(u.z());
      p.ph[2] = std::atan2(u.y(), u.x());
    }
  }
  return p;
}

struct Recovery {
  double max_f_error = 0, max_d_relative = 0, max_angle_deg = 0;
};

// Fits noiseless data of `truth` and matches each true fibre to the fitted one of the closest axis.
Recovery recover(const DiffusionScheme& scheme, const BallStickParams& truth, int fibres, int model,
                 BallStickFit* out = nullptr) {
  const std::vector<double> s = ball_stick_signal(scheme, truth, fibres, model);
  const BallStickFit fit = fit_ball_stick(scheme, s.data(), fibres, model);
  EXPECT_TRUE(fit.ok);
  if (out != nullptr) *out = fit;
  Recovery r;
  r.max_d_relative = std::abs(fit.params.d / truth.d - 1.0);
  for (int j = 0; j < fibres; ++j) {
    int best = 0;
    double best_angle = 180;
    for (int k = 0; k < fibres; ++k) {
      const double a = axis_angle_deg(direction(truth, j), direction(fit.params, k));
      if (a < best_angle) {
        best_angle = a;
        best = k;
      }
    }
    r.max_angle_deg = std::max(r.max_angle_deg, best_angle);
    r.max_f_error =
        std::max(r.max_f_error, std::abs(fit.params.f[static_cast<size_t>(best)] - truth.f[static_cast<size_t>(j)]));
  }
  return r;
}

Recovery worse(const Recovery& a, const Recovery& b) {
  return {std::max(a.max_f_error, b.max_f_error), std::max(a.max_d_relative, b.max_d_relative),
          std::max(a.max_angle_deg, b.max_angle_deg)};
}

void print(const char* what, const Recovery& r, int recovered, int count) {
  std::printf("[ measured ] %s: %d/%d recovered; worst of those: f error %.2e, d relative error %.2e, angle %.2e deg\n",
              what, recovered, count, r.max_f_error, r.max_d_relative, r.max_angle_deg);
}

class BallStickInit : public ::testing::Test {
 protected:
  DiffusionScheme scheme_ = synthetic_scheme(64, 4, 1000.0);
};

TEST_F(BallStickInit, TensorFitRecoversAKnownTensor) {
  // D = R diag(1.7, 0.4, 0.2) 1e-3 R' with an oblique rotation; S = S0 exp(-b g' D g).
  const Eigen::Matrix3d r = (Eigen::AngleAxisd(0.7, Eigen::Vector3d(1, 2, 3).normalized()) *
                             Eigen::AngleAxisd(-0.4, Eigen::Vector3d(0, 1, -1).normalized()))
                                .toRotationMatrix();
  const Eigen::Vector3d lambda(1.7e-3, 0.4e-3, 0.2e-3);
  const Eigen::Matrix3d d = r * lambda.asDiagonal() * r.transpose();
  std::vector<double> s(scheme_.bvals.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const Eigen::Vector3d g(scheme_.bvecs[i][0], scheme_.bvecs[i][1], scheme_.bvecs[i][2]);
    s[i] = 812.5 * std::exp(-scheme_.bvals[i] * g.dot(d * g));
  }
  const TensorFit fit = fit_tensor(scheme_, s.data());
  ASSERT_TRUE(fit.ok);
  const double md = lambda.mean();
  const double fa = std::sqrt(1.5) * (lambda.array() - md).matrix().norm() / lambda.norm();
  EXPECT_NEAR(fit.md / md, 1.0, 1e-6);
  EXPECT_NEAR(fit.fa / fa, 1.0, 1e-6);
  EXPECT_NEAR(fit.s0 / 812.5, 1.0, 1e-6);
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(fit.eigenvalues[static_cast<size_t>(k)] / lambda(k), 1.0, 1e-6) << k;
  }
  const Eigen::Vector3d e1 = r.col(0), e2 = r.col(1);
  EXPECT_LT(axis_angle_deg(fit.e1, {e1(0), e1(1), e1(2)}), 0.1);
  EXPECT_LT(axis_angle_deg(fit.e2, {e2(0), e2(1), e2(2)}), 0.1);
}

TEST_F(BallStickInit, TensorFitNeedsSevenPositiveMeasurements) {
  std::vector<double> s(scheme_.bvals.size(), 0.0);
  for (size_t i = 0; i < 6; ++i) s[i] = 100.0;
  EXPECT_FALSE(fit_tensor(scheme_, s.data()).ok);
}

TEST_F(BallStickInit, SingleFibreAtSeveralOrientations) {
  const double angles[][2] = {{0.0, 0.0}, {0.05, 1.0}, {kPi / 2, 0.3}, {1.1, -2.5}, {2.6, 2.0}};
  Recovery worst;
  for (const auto& a : angles) {
    for (double f : {0.3, 0.6, 0.85}) {
      const Recovery r = recover(scheme_, crossing(a[0], a[1], 0, {f}), 1, 1);
      EXPECT_LT(r.max_f_error, 0.02) << a[0] << " " << a[1] << " f " << f;
      EXPECT_LT(r.max_d_relative, 0.05) << a[0] << " " << a[1] << " f " << f;
      EXPECT_LT(r.max_angle_deg, 2.0) << a[0] << " " << a[1] << " f " << f;
      worst = worse(worst, r);
    }
  }
  print("1 fibre (15 voxels)", worst, 15, 15);
}

// Crossings at `count` random orientations of the first stick (fixed seed); returns how many were recovered within
// f 0.02, d 5% and 2 degrees, and the worst errors over those.
int random_crossings(const DiffusionScheme& scheme, double crossing_deg, std::vector<double> f, int model, int count,
                     Recovery& worst, double d_std = 0) {
  std::mt19937_64 generator(20240611);
  std::uniform_real_distribution<double> uniform(0, 1);
  int recovered = 0;
  for (int k = 0; k < count; ++k) {
    const double th = std::acos(2 * uniform(generator) - 1), ph = 2 * kPi * uniform(generator);
    BallStickParams truth = crossing(th, ph, crossing_deg, f);
    truth.d_std = d_std;
    const Recovery r = recover(scheme, truth, static_cast<int>(f.size()), model);
    if (r.max_f_error < 0.02 && r.max_d_relative < 0.05 && r.max_angle_deg < 2.0) {
      ++recovered;
      worst = worse(worst, r);
    }
  }
  return recovered;
}

TEST_F(BallStickInit, NinetyDegreeCrossing) {
  Recovery worst;
  EXPECT_EQ(random_crossings(scheme_, 90, {0.6, 0.3}, 1, 40, worst), 40);
  print("2 fibres at 90 deg", worst, 40, 40);
}

TEST_F(BallStickInit, SixtyDegreeCrossing) {
  Recovery worst;
  EXPECT_EQ(random_crossings(scheme_, 60, {0.5, 0.3}, 1, 40, worst), 40);
  print("2 fibres at 60 deg", worst, 40, 40);
}

TEST_F(BallStickInit, ThirtyDegreeCrossing) {
  Recovery worst;
  EXPECT_EQ(random_crossings(scheme_, 30, {0.5, 0.3}, 1, 20, worst), 20);
  print("2 fibres at 30 deg", worst, 20, 20);
}

TEST_F(BallStickInit, ThreeFibres) {
  // Mutually perpendicular: all recovered. The first two 60 degrees apart and the third perpendicular to both: most.
  // With both starts always run, 2 of 200 orientations stayed in a local minimum with one stick ~37 degrees off; with
  // the second start only where the first put two sticks within 35 degrees (half the cost), 28 of these 30 are
  // recovered (the MCMC's burn-in starts from there).
  Recovery worst90, worst60;
  EXPECT_EQ(random_crossings(scheme_, 90, {0.4, 0.3, 0.2}, 1, 30, worst90), 30);
  print("3 fibres at 90 deg", worst90, 30, 30);
  const int recovered = random_crossings(scheme_, 60, {0.4, 0.3, 0.2}, 1, 30, worst60);
  EXPECT_GE(recovered, 27);
  print("3 fibres, 60 deg + perpendicular", worst60, recovered, 30);
}

TEST_F(BallStickInit, ExtraFibresOfOneFibreDataStaySmall) {
  const BallStickParams truth = crossing(1.1, -2.5, 0, {0.6});
  const std::vector<double> s = ball_stick_signal(scheme_, truth, 1, 1);
  const BallStickFit fit = fit_ball_stick(scheme_, s.data(), 3, 1);
  ASSERT_TRUE(fit.ok);
  EXPECT_NEAR(fit.params.f[0] + fit.params.f[1] + fit.params.f[2], 0.6, 0.02);
  // The largest stick carries the fibre.
  int largest = 0;
  for (int j = 1; j < 3; ++j) {
    if (fit.params.f[static_cast<size_t>(j)] > fit.params.f[static_cast<size_t>(largest)]) largest = j;
  }
  EXPECT_GT(fit.params.f[static_cast<size_t>(largest)], 0.58);
  EXPECT_LT(axis_angle_deg(direction(fit.params, largest), direction(truth, 0)), 2.0);
}

TEST_F(BallStickInit, ModelTwo) {
  Recovery worst1, worst2;
  EXPECT_EQ(random_crossings(scheme_, 0, {0.6}, 2, 20, worst1, 0.4e-3), 20);
  print("model 2, 1 fibre", worst1, 20, 20);
  EXPECT_EQ(random_crossings(scheme_, 90, {0.5, 0.3}, 2, 20, worst2, 0.4e-3), 20);
  print("model 2, 2 fibres at 90 deg", worst2, 20, 20);
  // d_std itself, on one voxel.
  BallStickParams truth = crossing(0.9, 0.4, 0, {0.6});
  truth.d_std = 0.4e-3;
  BallStickFit fit;
  recover(scheme_, truth, 1, 2, &fit);
  EXPECT_NEAR(fit.params.d_std / truth.d_std, 1.0, 0.05);
  std::printf("[ measured ] model 2 d_std relative error %.2e\n", std::abs(fit.params.d_std / truth.d_std - 1));
}

TEST_F(BallStickInit, NoisyVoxels) {
  // Rician noise at SNR 30 (S0 / sigma), 60 voxels each: one fibre (f 0.6) and two at 90 degrees (f 0.5 / 0.3), fitted
  // through initialise_ball_stick with as many sticks as there are fibres. Median and 90th-percentile angle errors.
  std::mt19937_64 generator(5);
  std::uniform_real_distribution<double> uniform(0, 1);
  for (int fibres : {1, 2}) {
    std::vector<BallStickParams> truth;
    for (int v = 0; v < 60; ++v) {
      const double th = std::acos(2 * uniform(generator) - 1), ph = 2 * kPi * uniform(generator);
      truth.push_back(fibres == 1 ? crossing(th, ph, 0, {0.6}) : crossing(th, ph, 90, {0.5, 0.3}));
    }
    const std::vector<float> data = synthetic_voxels(scheme_, truth, fibres, 1, 30.0, true, 17);
    const std::vector<BallStickParams> init = initialise_ball_stick(scheme_, data.data(), 60, fibres, 1);
    std::vector<double> errors;
    for (size_t v = 0; v < truth.size(); ++v) {
      for (int j = 0; j < fibres; ++j) {  // sorted by f like the truth
        errors.push_back(axis_angle_deg(direction(truth[v], j), direction(init[v], j)));
      }
    }
    std::sort(errors.begin(), errors.end());
    const double median = errors[errors.size() / 2], p90 = errors[errors.size() * 9 / 10];
    std::printf("[ measured ] %d fibre(s), SNR 30 Rician: angle error median %.2f, 90th percentile %.2f deg\n", fibres,
                median, p90);
    EXPECT_LT(median, fibres == 1 ? 2.0 : 4.0);
    EXPECT_LT(p90, fibres == 1 ? 4.0 : 8.0);
  }
}

TEST_F(BallStickInit, McmcReadyBoundsSortsAndCanonicalises) {
  BallStickParams p;
  p.s0 = 500;
  p.d = 0.02;  // above kMaxDiffusivity
  p.d_std = 0.5;
  p.f = {0.0, 0.95, 0.5};
  p.th = {-0.3, 4.0, 1.0};
  p.ph = {0.2, 7.0, -1.0};
  const BallStickParams q = mcmc_ready(p, 3, 2, 4.0);
  EXPECT_LE(q.d, kMaxDiffusivity);
  EXPECT_GE(q.d, kInitMinDiffusivity);
  EXPECT_LE(q.d_std, kMaxDiffusivityStd);
  EXPECT_DOUBLE_EQ(q.tau, 0.25);
  double sum = 0;
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_GE(q.f[j], kInitMinFraction);
    EXPECT_LE(q.f[j], kInitMaxFraction);
    EXPECT_GE(q.th[j], 0.0);
    EXPECT_LE(q.th[j], kPi);
    EXPECT_GT(q.ph[j], -kPi - 1e-12);
    EXPECT_LE(q.ph[j], kPi);
    if (j > 0) {
      EXPECT_GE(q.f[j - 1], q.f[j]);
    }
    sum += q.f[j];
  }
  EXPECT_NEAR(sum, kInitMaxFractionSum, 1e-12);
  // Sorted: the fibre of f 0.95 first, then 0.5, then 0; each keeps its direction.
  const int from[3] = {1, 2, 0};
  for (int j = 0; j < 3; ++j) {
    const std::array<double, 3> a = direction(q, j), b = direction(p, from[j]);
    for (size_t c = 0; c < 3; ++c) EXPECT_NEAR(a[c], b[c], 1e-12) << j;
  }
  // Model 1: d_std = 0; a zero residual variance gives a finite tau.
  const BallStickParams r = mcmc_ready(p, 1, 1, 0.0);
  EXPECT_EQ(r.d_std, 0.0);
  EXPECT_TRUE(std::isfinite(r.tau));
  EXPECT_GT(r.tau, 0.0);
}

TEST_F(BallStickInit, FlagsVoxelsItCannotFitAndEstimatesTau) {
  // Voxels: 0-23 noisy 2-fibre data (SNR 25), then all zeros, a NaN, a negative b = 0 signal, too few positive values.
  constexpr int kNoisy = 24;
  std::vector<BallStickParams> truth;
  for (int v = 0; v < kNoisy; ++v) truth.push_back(crossing(0.3 + 0.11 * v, 0.5 * v, 90, {0.5, 0.3}));
  std::vector<float> data = synthetic_voxels(scheme_, truth, 2, 1, 25.0, false, 7);
  const size_t n = scheme_.bvals.size();
  std::vector<float> bad(4 * n, 0.0f);
  for (size_t i = 0; i < n; ++i) bad[n + i] = 300.0f;
  bad[n + 5] = std::numeric_limits<float>::quiet_NaN();
  for (size_t i = 0; i < n; ++i) bad[2 * n + i] = scheme_.bvals[i] > 0 ? 100.0f : -5.0f;
  for (size_t i = 0; i < 5; ++i) bad[3 * n + i] = 400.0f;
  data.insert(data.end(), bad.begin(), bad.end());
  const int voxels = static_cast<int>(data.size() / n);
  std::vector<uint8_t> fitted;
  const std::vector<BallStickParams> init = initialise_ball_stick(scheme_, data.data(), voxels, 2, 1, &fitted);
  ASSERT_EQ(init.size(), static_cast<size_t>(voxels));
  ASSERT_EQ(fitted.size(), static_cast<size_t>(voxels));
  for (int v = 0; v < voxels; ++v) {
    const BallStickParams& p = init[static_cast<size_t>(v)];
    EXPECT_EQ(fitted[static_cast<size_t>(v)], v < kNoisy ? 1 : 0) << v;
    for (double x : {p.s0, p.d, p.tau, p.f[0], p.f[1], p.th[0], p.th[1], p.ph[0], p.ph[1]}) {
      EXPECT_TRUE(std::isfinite(x)) << v;
    }
    EXPECT_GT(p.s0, 0) << v;
    EXPECT_GT(p.tau, 0) << v;
    EXPECT_GE(p.f[1], kInitMinFraction) << v;
    EXPECT_LE(p.f[0] + p.f[1], kInitMaxFractionSum + 1e-12) << v;
  }
  // tau = 1 / (SSE / (n - p)): each within the spread of a variance estimate from 60 degrees of freedom (relative SD
  // 0.18), their mean within 0.1.
  const double sigma = 1000.0 / 25.0;
  double mean_ratio = 0;
  for (int v = 0; v < kNoisy; ++v) {
    const double ratio = init[static_cast<size_t>(v)].tau * sigma * sigma;
    EXPECT_NEAR(ratio, 1.0, 0.6) << v;
    EXPECT_NEAR(init[static_cast<size_t>(v)].s0, 1000.0, 50.0) << v;
    mean_ratio += ratio / kNoisy;
  }
  EXPECT_NEAR(mean_ratio, 1.0, 0.1);
  std::printf("[ measured ] mean tau sigma^2 over %d voxels at SNR 25: %.3f\n", kNoisy, mean_ratio);
  EXPECT_NEAR(init[kNoisy + 1].s0, 300.0, 1e-9);  // the NaN voxel: S0 from its b = 0 measurements
  // The same result on a second call (each voxel is independent of the thread that fits it).
  const std::vector<BallStickParams> again = initialise_ball_stick(scheme_, data.data(), voxels, 2, 1);
  for (size_t v = 0; v < init.size(); ++v) {
    EXPECT_EQ(again[v].th[0], init[v].th[0]);
    EXPECT_EQ(again[v].f[1], init[v].f[1]);
  }
}

TEST_F(BallStickInit, RejectsBadArguments) {
  std::vector<float> data(scheme_.bvals.size(), 1.0f);
  EXPECT_THROW(initialise_ball_stick(scheme_, data.data(), 1, 0, 1), std::invalid_argument);
  EXPECT_THROW(initialise_ball_stick(scheme_, data.data(), 1, 4, 1), std::invalid_argument);
  EXPECT_THROW(initialise_ball_stick(scheme_, data.data(), 1, 1, 3), std::invalid_argument);
  EXPECT_THROW(initialise_ball_stick(scheme_, data.data(), -1, 1, 1), std::invalid_argument);
  EXPECT_TRUE(initialise_ball_stick(scheme_, nullptr, 0, 1, 1).empty());
}

}  // namespace
}  // namespace rtf
