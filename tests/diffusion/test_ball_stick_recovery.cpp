// ctest-label: gpu
// ctest-properties: PROCESSORS 2 (PoCL chains fill every core)
// `rtfmri bedpost`'s pipeline on synthetic voxels with known fibres (core/diffusion/synthetic_dwi.hpp): the host
// initialisation, the device chains in float and FSL's dyads recover the sticks. 64 directions at b 1000 plus 5
// b = 0, SNR 30 (Gaussian), d 0.0011 mm^2/s, fresh random orientations; 500 burn-in + 500 jumps, every 10th kept.
// Stated bounds on the median angular error of the dyads (as axes): one fibre 3 degrees, 90 degree crossing 6, 60
// degree crossing 10 (each fibre matched to its nearest true axis); the ARD prior switches the unsupported second and
// third sticks of single-fibre voxels off (posterior mean f < 0.05).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "core/diffusion/ball_stick_init.hpp"
#include "core/diffusion/ball_stick_mcmc.hpp"
#include "core/diffusion/ball_stick_signal.hpp"
#include "core/diffusion/dyads.hpp"
#include "core/diffusion/synthetic_dwi.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

double axis_angle_deg(const std::array<double, 3>& a, const std::array<double, 3>& b) {
  const double dot = std::fabs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2]);
  return std::acos(std::min(1.0, dot)) * 180.0 / std::numbers::pi;
}

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  return x[x.size() / 2];
}

// Voxels with `present` sticks of fractions `f` at `crossing_deg` (the second in a random plane through the first).
std::vector<BallStickParams> crossing_voxels(int voxels, int present, double crossing_deg, std::mt19937& rng) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<BallStickParams> truth(static_cast<size_t>(voxels));
  for (BallStickParams& p : truth) {
    p.s0 = 1000.0;
    p.d = 0.0011;
    // A random first axis a and a unit vector b orthogonal to it; the second fibre at the crossing angle in (a, b).
    const double th = std::acos(2.0 * uniform(rng) - 1.0), ph = 2.0 * std::numbers::pi * uniform(rng);
    const std::array<double, 3> a = fibre_direction(th, ph);
    std::array<double, 3> r{uniform(rng) - 0.5, uniform(rng) - 0.5, uniform(rng) - 0.5};
    const double ra = r[0] * a[0] + r[1] * a[1] + r[2] * a[2];
    for (size_t c = 0; c < 3; ++c) r[c] -= ra * a[c];
    const double norm = std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    const double angle = crossing_deg * std::numbers::pi / 180.0;
    std::array<double, 3> second{};
    for (size_t c = 0; c < 3; ++c) second[c] = std::cos(angle) * a[c] + std::sin(angle) * r[c] / norm;
    p.th[0] = th;
    p.ph[0] = ph;
    p.th[1] = std::acos(std::clamp(second[2], -1.0, 1.0));
    p.ph[1] = std::atan2(second[1], second[0]);
    p.f[0] = present == 1 ? 0.6 : 0.4;
    p.f[1] = present == 2 ? 0.3 : 0.0;
  }
  return truth;
}

struct Recovery {
  std::vector<double> errors;  // per voxel and present fibre
  double mean_unsupported_f = 0;
};

Recovery recover(const std::vector<BallStickParams>& truth, int present, int fibres, const BallStickOptions& base,
                 uint64_t seed) {
  const DiffusionScheme scheme = synthetic_scheme(64, 5, 1000.0);
  const std::vector<float> data = synthetic_voxels(scheme, truth, 2, 1, 30.0, false, seed);
  const auto voxels = static_cast<int>(truth.size());
  const std::vector<BallStickParams> init = initialise_ball_stick(scheme, data.data(), voxels, fibres, 1);
  BallStickOptions o = base;
  o.fibres = fibres;
  const BallStickRun run = ball_stick_mcmc(test::test_device(), scheme, data, init, o, 0);
  Recovery out;
  double unsupported = 0;
  int unsupported_count = 0;
  for (int v = 0; v < voxels; ++v) {
    std::vector<std::array<double, 3>> found;
    std::vector<double> mean_f;
    for (int j = 0; j < fibres; ++j) {
      found.push_back(mean_dyad(run.th(j, 0) + v, run.ph(j, 0) + v, run.samples, voxels).vector);
      double f = 0;
      for (int s = 0; s < run.samples; ++s) f += run.f(j, s)[v];
      mean_f.push_back(f / run.samples);
    }
    const BallStickParams& t = truth[static_cast<size_t>(v)];
    // The strongest `present` sticks against the true axes, both assignments tried for two.
    std::vector<int> order(static_cast<size_t>(fibres));
    for (int j = 0; j < fibres; ++j) order[static_cast<size_t>(j)] = j;
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return mean_f[static_cast<size_t>(a)] > mean_f[static_cast<size_t>(b)]; });
    if (present == 1) {
      out.errors.push_back(axis_angle_deg(found[static_cast<size_t>(order[0])], fibre_direction(t.th[0], t.ph[0])));
      for (int j = 1; j < fibres; ++j) {
        unsupported += mean_f[static_cast<size_t>(order[static_cast<size_t>(j)])];
        ++unsupported_count;
      }
    } else {
      const std::array<double, 3> a = fibre_direction(t.th[0], t.ph[0]), b = fibre_direction(t.th[1], t.ph[1]);
      const auto& x = found[static_cast<size_t>(order[0])];
      const auto& y = found[static_cast<size_t>(order[1])];
      const double keep = axis_angle_deg(x, a) + axis_angle_deg(y, b),
                   swap = axis_angle_deg(x, b) + axis_angle_deg(y, a);
      if (keep <= swap) {
        out.errors.push_back(axis_angle_deg(x, a));
        out.errors.push_back(axis_angle_deg(y, b));
      } else {
        out.errors.push_back(axis_angle_deg(x, b));
        out.errors.push_back(axis_angle_deg(y, a));
      }
    }
  }
  out.mean_unsupported_f = unsupported_count > 0 ? unsupported / unsupported_count : 0.0;
  return out;
}

BallStickOptions short_chains(uint64_t seed) {
  BallStickOptions o;
  o.burn_in = 500;
  o.jumps = 500;
  o.sample_every = 10;
  o.seed = seed;
  return o;
}

TEST(BallStickRecovery, OneFibreAndArdSwitchesTheOthersOff) {
  const uint64_t seed = test::test_seed();
  std::mt19937 rng(static_cast<uint32_t>(seed));
  const Recovery r = recover(crossing_voxels(31, 1, 0.0, rng), 1, 3, short_chains(seed), seed);
  const double m = median(r.errors);
  std::printf("one fibre: median dyad error %.2f degrees, mean f of unsupported sticks %.4f\n", m,
              r.mean_unsupported_f);
  EXPECT_LT(m, 3.0);
  EXPECT_LT(r.mean_unsupported_f, 0.05);
}

TEST(BallStickRecovery, NinetyDegreeCrossing) {
  const uint64_t seed = test::test_seed();
  std::mt19937 rng(static_cast<uint32_t>(seed));
  const Recovery r = recover(crossing_voxels(31, 2, 90.0, rng), 2, 2, short_chains(seed), seed);
  const double m = median(r.errors);
  std::printf("90 degree crossing: median dyad error %.2f degrees\n", m);
  EXPECT_LT(m, 6.0);
}

TEST(BallStickRecovery, SixtyDegreeCrossing) {
  const uint64_t seed = test::test_seed();
  std::mt19937 rng(static_cast<uint32_t>(seed));
  const Recovery r = recover(crossing_voxels(31, 2, 60.0, rng), 2, 2, short_chains(seed), seed);
  const double m = median(r.errors);
  std::printf("60 degree crossing: median dyad error %.2f degrees\n", m);
  EXPECT_LT(m, 10.0);
}

}  // namespace
}  // namespace rtf
