// Synthetic diffusion data: the scheme's b = 0 placement, unit and quasi-uniform directions (as axes); noiseless voxels
// equal ball_stick_signal; Gaussian and Rician noise have the stated moments; the output is deterministic per seed.
// ctest-label: unit
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "core/diffusion/ball_stick_signal.hpp"
#include "core/diffusion/synthetic_dwi.hpp"

namespace rtf {
namespace {

TEST(SyntheticDwi, SchemeLayoutAndDirections) {
  const DiffusionScheme scheme = synthetic_scheme(64, 5, 1500.0);
  ASSERT_EQ(scheme.measurements(), 69);
  ASSERT_EQ(scheme.bvecs.size(), 69u);
  int b0s = 0;
  std::vector<std::array<double, 3>> dirs;
  for (size_t i = 0; i < scheme.bvals.size(); ++i) {
    const auto& g = scheme.bvecs[i];
    if (scheme.bvals[i] == 0) {
      ++b0s;
      EXPECT_EQ(g[0] * g[0] + g[1] * g[1] + g[2] * g[2], 0.0);
      continue;
    }
    EXPECT_EQ(scheme.bvals[i], 1500.0);
    EXPECT_NEAR(g[0] * g[0] + g[1] * g[1] + g[2] * g[2], 1.0, 1e-12);
    dirs.push_back(g);
  }
  EXPECT_EQ(b0s, 5);
  EXPECT_EQ(scheme.bvals[0], 0.0);
  // Quasi-uniform axes: no two closer than 10 degrees, and every axis of a fine test grid within 16 degrees of one.
  double closest = 90;
  for (size_t a = 0; a < dirs.size(); ++a) {
    for (size_t b = a + 1; b < dirs.size(); ++b) {
      const double dot = std::abs(dirs[a][0] * dirs[b][0] + dirs[a][1] * dirs[b][1] + dirs[a][2] * dirs[b][2]);
      closest = std::min(closest, std::acos(std::min(1.0, dot)) * 180 / std::numbers::pi);
    }
  }
  EXPECT_GT(closest, 10.0);
  double farthest = 0;
  for (int i = 0; i < 40; ++i) {
    for (int j = 0; j < 80; ++j) {
      const std::array<double, 3> v = fibre_direction(std::numbers::pi * (i + 0.5) / 40, 2 * std::numbers::pi * j / 80);
      double best = 90;
      for (const auto& g : dirs) {
        const double dot = std::abs(v[0] * g[0] + v[1] * g[1] + v[2] * g[2]);
        best = std::min(best, std::acos(std::min(1.0, dot)) * 180 / std::numbers::pi);
      }
      farthest = std::max(farthest, best);
    }
  }
  EXPECT_LT(farthest, 16.0);
}

TEST(SyntheticDwi, RejectsBadArguments) {
  EXPECT_THROW(synthetic_scheme(0, 1, 1000), std::invalid_argument);
  EXPECT_THROW(synthetic_scheme(10, -1, 1000), std::invalid_argument);
  EXPECT_THROW(synthetic_scheme(10, 1, 0), std::invalid_argument);
  const DiffusionScheme scheme = synthetic_scheme(10, 1, 1000);
  EXPECT_THROW(synthetic_voxels(scheme, {BallStickParams{}}, 0, 1, 0, false, 1), std::invalid_argument);
  EXPECT_THROW(synthetic_voxels(scheme, {BallStickParams{}}, 1, 3, 0, false, 1), std::invalid_argument);
}

BallStickParams voxel(double s0) {
  BallStickParams p;
  p.s0 = s0;
  p.d = 1.1e-3;
  p.d_std = 3e-4;
  p.f = {0.5, 0.2, 0.1};
  p.th = {0.4, 1.5, 2.2};
  p.ph = {0.1, -1.0, 2.5};
  return p;
}

TEST(SyntheticDwi, NoiselessEqualsTheModel) {
  const DiffusionScheme scheme = synthetic_scheme(30, 2, 1000);
  for (int model : {1, 2}) {
    const std::vector<float> data = synthetic_voxels(scheme, {voxel(100), voxel(700)}, 3, model, 0, false, 1);
    ASSERT_EQ(data.size(), 64u);
    for (size_t v = 0; v < 2; ++v) {
      const std::vector<double> s = ball_stick_signal(scheme, voxel(v == 0 ? 100 : 700), 3, model);
      for (size_t i = 0; i < 32; ++i) EXPECT_EQ(data[v * 32 + i], static_cast<float>(s[i])) << model << " " << i;
    }
  }
}

TEST(SyntheticDwi, NoiseMomentsAndDeterminism) {
  // 10,000 voxels (three seed blocks) with S0 = 1000: S at the b = 0 volume is 1000, sigma = S0 / 20 = 50.
  const DiffusionScheme scheme = synthetic_scheme(6, 1, 1000);
  std::vector<BallStickParams> truth(10000, voxel(1000));
  const std::vector<float> gauss = synthetic_voxels(scheme, truth, 2, 1, 20, false, 11);
  const size_t n = 7;
  double mean = 0, var = 0;
  for (size_t v = 0; v < truth.size(); ++v) mean += gauss[v * n] / 1e4;
  for (size_t v = 0; v < truth.size(); ++v) var += (gauss[v * n] - mean) * (gauss[v * n] - mean) / (1e4 - 1);
  EXPECT_NEAR(mean, 1000.0, 2.0);          // SE 0.5
  EXPECT_NEAR(std::sqrt(var), 50.0, 1.5);  // SE 0.35
  // Rician with zero signal: the magnitude is Rayleigh, mean sigma sqrt(pi / 2).
  std::vector<BallStickParams> dark(10000, voxel(1000));
  for (BallStickParams& p : dark) {
    p.f = {0, 0, 0};
    p.d = 1.0;  // exp(-1000) = 0 for b > 0
  }
  const std::vector<float> rice = synthetic_voxels(scheme, dark, 1, 1, 20, true, 12);
  double rayleigh = 0;
  for (size_t v = 0; v < dark.size(); ++v) {
    EXPECT_GE(rice[v * n + 3], 0.0f);
    rayleigh += rice[v * n + 3] / 1e4;
  }
  EXPECT_NEAR(rayleigh, 50.0 * std::sqrt(std::numbers::pi / 2), 1.0);  // SE 0.26
  // Deterministic: the same seed gives the same floats, another seed others.
  EXPECT_EQ(synthetic_voxels(scheme, truth, 2, 1, 20, false, 11), gauss);
  EXPECT_NE(synthetic_voxels(scheme, truth, 2, 1, 20, false, 12), gauss);
}

}  // namespace
}  // namespace rtf
