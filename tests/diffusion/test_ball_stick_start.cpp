// ctest-label: gpu
// The device's ball-and-stick start (core/diffusion/ball_stick_start.hpp, kernels/ball_stick_start.cl) against the
// host's double reference (initialise_ball_stick), on fresh random voxels (two shells, 41 measurements, 1-3 fibres,
// model 1 and 2, noiseless and SNR 30, 157 voxels: not a multiple of the work-group). Both fit in double but factorise
// differently (Cholesky of the scaled normal equations against pivoted QR and LDLT), so they agree to rounding where
// the fit has one well-posed minimum: one stick, every voxel within 1e-8 relative and 1e-4 degrees (measured: 1e-11,
// 1.5e-6 degrees, acos's resolution). With two or three sticks the Levenberg-Marquardt path can pass near a saddle (a
// stick of small f whose direction the data barely see), where rounding decides which way it goes: over 10 seeds
// 90-93% of such voxels reached the same point (1e-5, 1e-3 degrees), 96-97% the same residual; the rest reached
// other minima, the device's better as often as the host's (a sign test: a start that is worse, such as the device
// without the nested chain, fails it). Voxels that cannot be fitted get the same neutral state and flag. Bad
// arguments are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "core/diffusion/ball_stick_init.hpp"
#include "core/diffusion/ball_stick_signal.hpp"
#include "core/diffusion/ball_stick_start.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

constexpr int kVoxels = 157;

// 3 b = 0 measurements and 38 random directions at b 1000 and 2500.
DiffusionScheme random_scheme(std::mt19937& rng) {
  std::normal_distribution<double> normal;
  DiffusionScheme scheme;
  for (int i = 0; i < 41; ++i) {
    if (i % 14 == 0) {
      scheme.bvals.push_back(0.0);
      scheme.bvecs.push_back({0.0, 0.0, 0.0});
      continue;
    }
    std::array<double, 3> g{normal(rng), normal(rng), normal(rng)};
    const double norm = std::sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
    for (double& x : g) x /= norm;
    scheme.bvals.push_back(i % 2 == 0 ? 1000.0 : 2500.0);
    scheme.bvecs.push_back(g);
  }
  return scheme;
}

// Voxels of 1..fibres sticks at random orientations (fractions 0.5, 0.25, 0.17; absent fibres 0), noise of standard
// deviation S0 / snr (snr 0: none).
std::vector<float> random_voxels(std::mt19937& rng, const DiffusionScheme& scheme, int fibres, int model, double snr) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::normal_distribution<double> normal;
  std::vector<float> data;
  for (int v = 0; v < kVoxels; ++v) {
    BallStickParams p;
    p.s0 = 500.0 + 1500.0 * uniform(rng);
    p.d = 0.0006 + 0.0012 * uniform(rng);
    p.d_std = 0.3 * p.d;
    const int present = 1 + v % fibres;
    for (int j = 0; j < present; ++j) {
      const auto k = static_cast<size_t>(j);
      p.th[k] = std::acos(2.0 * uniform(rng) - 1.0);
      p.ph[k] = 2.0 * std::numbers::pi * uniform(rng);
      p.f[k] = 0.5 / (j + 1);
    }
    for (const double s : ball_stick_signal(scheme, p, fibres, model)) {
      data.push_back(static_cast<float>(snr > 0 ? s + p.s0 / snr * normal(rng) : s));
    }
  }
  return data;
}

double axis_angle_deg(const BallStickParams& a, const BallStickParams& b, int j) {
  const auto k = static_cast<size_t>(j);
  const std::array<double, 3> u = fibre_direction(a.th[k], a.ph[k]), w = fibre_direction(b.th[k], b.ph[k]);
  return std::acos(std::min(1.0, std::fabs(u[0] * w[0] + u[1] * w[1] + u[2] * w[2]))) * 180.0 / std::numbers::pi;
}

struct Difference {
  double relative = 0;  // S0, d, d_std, tau: relative; f: absolute
  double angle_deg = 0;
};

Difference difference(const BallStickParams& a, const BallStickParams& b, int fibres) {
  Difference d;
  const auto rel = [](double x, double y) { return std::fabs(x - y) / std::max(std::fabs(y), 1e-300); };
  d.relative =
      std::max({rel(a.s0, b.s0), rel(a.d, b.d), b.d_std > 0 ? rel(a.d_std, b.d_std) : a.d_std, rel(a.tau, b.tau)});
  for (int j = 0; j < fibres; ++j) {
    const auto k = static_cast<size_t>(j);
    d.relative = std::max(d.relative, std::fabs(a.f[k] - b.f[k]));
    // A fibre's direction counts only where it carries signal (f at its floor: the data do not see it).
    if (b.f[k] > 2 * kInitMinFraction) d.angle_deg = std::max(d.angle_deg, axis_angle_deg(a, b, j));
  }
  return d;
}

TEST(BallStickStart, DeviceStartIsTheHostReferences) {
  Device& device = test::test_device();
  if (!device.has_fp64()) GTEST_SKIP() << "the device has no fp64";
  std::mt19937 rng(test::test_seed());
  // Multi-fibre voxels: the same point, the same residual (tau within 1e-4) at another point of a flat valley, or
  // another minimum (one start better than the other by > 1%: counted by which).
  int multi = 0, same_point = 0, same_residual = 0, device_worse = 0, device_better = 0;
  for (int model : {1, 2}) {
    for (int fibres = 1; fibres <= 3; ++fibres) {
      for (double snr : {0.0, 30.0}) {
        const DiffusionScheme scheme = random_scheme(rng);
        const std::vector<float> data = random_voxels(rng, scheme, fibres, model, snr);
        std::vector<uint8_t> host_ok, device_ok;
        const std::vector<BallStickParams> host =
            initialise_ball_stick(scheme, data.data(), kVoxels, fibres, model, &host_ok);
        const std::vector<BallStickParams> dev =
            initialise_ball_stick_on_device(device, scheme, data.data(), kVoxels, fibres, model, &device_ok);
        ASSERT_EQ(dev.size(), host.size());
        ASSERT_EQ(device_ok, host_ok);
        int close = 0;
        double worst_relative = 0, worst_angle = 0;
        for (int v = 0; v < kVoxels; ++v) {
          const auto k = static_cast<size_t>(v);
          const Difference d = difference(dev[k], host[k], fibres);
          worst_relative = std::max(worst_relative, d.relative);
          worst_angle = std::max(worst_angle, d.angle_deg);
          if (fibres == 1) {  // one stick: a single well-posed minimum
            EXPECT_LE(d.relative, 1e-8) << "model " << model << " SNR " << snr << " voxel " << v;
            EXPECT_LE(d.angle_deg, 1e-4) << "model " << model << " SNR " << snr << " voxel " << v;
            continue;
          }
          ++multi;
          const double tau_ratio = dev[k].tau / host[k].tau;
          if (d.relative <= 1e-5 && d.angle_deg <= 1e-3) {
            ++close, ++same_point;
          } else if (std::fabs(tau_ratio - 1.0) <= 1e-4) {
            ++same_residual;
          } else if (tau_ratio < 1 / 1.01) {
            ++device_worse;
          } else if (tau_ratio > 1.01) {
            ++device_better;
          }
        }
        std::printf(
            "[ measured ] model %d, %d fibre(s), SNR %g: %d of %d voxels within 1e-5 / 1e-3 deg; worst %.2e, "
            "%.2e deg\n",
            model, fibres, snr, fibres == 1 ? kVoxels : close, kVoxels, worst_relative, worst_angle);
      }
    }
  }
  const int other = multi - same_point - same_residual;
  std::printf(
      "[ measured ] %d multi-fibre voxels: %d at the same point, %d of the same residual, %d elsewhere (device "
      "better %d, worse %d)\n",
      multi, same_point, same_residual, other, device_better, device_worse);
  EXPECT_GE(same_point, multi * 85 / 100);                  // measured 90-93% over 10 seeds
  EXPECT_GE(same_point + same_residual, multi * 92 / 100);  // measured 96-97%
  // Where the two land in different minima, neither start is the better one: device_worse ~ Binomial(m, 1/2) with
  // m = device_better + device_worse; 4 standard deviations.
  const int m = device_better + device_worse;
  EXPECT_LE(device_worse, m / 2.0 + 2.0 * std::sqrt(static_cast<double>(m)) + 1);
}

TEST(BallStickStart, FlagsTheVoxelsTheHostFlags) {
  Device& device = test::test_device();
  if (!device.has_fp64()) GTEST_SKIP() << "the device has no fp64";
  std::mt19937 rng(test::test_seed());
  const DiffusionScheme scheme = random_scheme(rng);
  const size_t n = scheme.bvals.size();
  // All zeros, a NaN, a negative b = 0 signal, too few positive values, then a fitted voxel.
  std::vector<float> data(5 * n, 0.0f);
  for (size_t i = 0; i < n; ++i) data[n + i] = 300.0f;
  data[n + 5] = std::numeric_limits<float>::quiet_NaN();
  for (size_t i = 0; i < n; ++i) data[2 * n + i] = scheme.bvals[i] > 0 ? 100.0f : -5.0f;
  for (size_t i = 0; i < 5; ++i) data[3 * n + i] = 400.0f;
  BallStickParams p;
  p.s0 = 900, p.d = 1e-3, p.f[0] = 0.5, p.th[0] = 1.0, p.ph[0] = 2.0;
  const std::vector<double> s = ball_stick_signal(scheme, p, 1, 1);
  for (size_t i = 0; i < n; ++i) data[4 * n + i] = static_cast<float>(s[i]);
  for (int model : {1, 2}) {
    std::vector<uint8_t> host_ok, device_ok;
    const std::vector<BallStickParams> host = initialise_ball_stick(scheme, data.data(), 5, 2, model, &host_ok);
    const std::vector<BallStickParams> dev =
        initialise_ball_stick_on_device(device, scheme, data.data(), 5, 2, model, &device_ok);
    EXPECT_EQ(device_ok, (std::vector<uint8_t>{0, 0, 0, 0, 1}));
    EXPECT_EQ(device_ok, host_ok);
    for (size_t v = 0; v < 4; ++v) {  // the neutral state, to the last bits
      const BallStickVector a = pack_params(dev[v]), b = pack_params(host[v]);
      for (size_t q = 0; q < a.size(); ++q) EXPECT_NEAR(a[q], b[q], 1e-12 * std::fabs(b[q])) << v << " " << q;
    }
    EXPECT_NEAR(dev[1].s0, 300.0, 1e-9);  // the NaN voxel: S0 from its b = 0 measurements
  }
}

TEST(BallStickStart, RefusesBadArguments) {
  Device& device = test::test_device();
  std::mt19937 rng(1);
  const DiffusionScheme scheme = random_scheme(rng);
  std::vector<float> data(scheme.bvals.size(), 1.0f);
  EXPECT_THROW(initialise_ball_stick_on_device(device, scheme, data.data(), 1, 0, 1), std::invalid_argument);
  EXPECT_THROW(initialise_ball_stick_on_device(device, scheme, data.data(), 1, 4, 1), std::invalid_argument);
  EXPECT_THROW(initialise_ball_stick_on_device(device, scheme, data.data(), 1, 1, 3), std::invalid_argument);
  EXPECT_THROW(initialise_ball_stick_on_device(device, scheme, data.data(), -1, 1, 1), std::invalid_argument);
  EXPECT_THROW(initialise_ball_stick_on_device(device, scheme, nullptr, 1, 1, 1), std::invalid_argument);
  if (device.has_fp64()) {
    EXPECT_TRUE(initialise_ball_stick_on_device(device, scheme, nullptr, 0, 1, 1).empty());
  }
}

}  // namespace
}  // namespace rtf
