// ctest-label: gpu
// The device's ball-and-stick chains (core/diffusion/ball_stick_mcmc.hpp, kernels/ball_stick.cl) against the double
// reference (core/reference/ball_stick_reference.hpp): compiled in double the device takes every decision the
// reference takes, so each iteration's state equals the reference's (relative 1e-12: both apply the same proposals;
// only the energies' last bits may differ) for model 1 and 2, Gaussian and Rician noise, 1-3 fibres, on odd sizes
// (37 measurements, 13 voxels) and fresh random data; compiled in float it follows the reference until a decision
// falls within float rounding of its bound. The kept samples and means are the reference's, and splitting the voxels
// into blocks changes nothing (the streams are keyed by the voxel's index in the mask), with one or several
// work-items (lanes) per voxel. Bad input is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <utility>
#include <vector>

#include "core/diffusion/ball_stick_mcmc.hpp"
#include "core/diffusion/ball_stick_signal.hpp"
#include "core/reference/ball_stick_reference.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

struct Case {
  DiffusionScheme scheme;
  std::vector<BallStickParams> truth, init;
  std::vector<float> data;  // [voxel][measurement]
};

// 3 b = 0 measurements and 34 random directions at b 1000 and 2500 (two shells, for model 2); voxels with 1-3
// fibres; the starting states the truth perturbed.
Case make_case(uint64_t seed, int voxels, int fibres, bool rician) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  Case c;
  for (int i = 0; i < 37; ++i) {
    if (i % 12 == 0) {
      c.scheme.bvals.push_back(0.0);
      c.scheme.bvecs.push_back({0.0, 0.0, 0.0});
      continue;
    }
    std::array<double, 3> g{normal(rng), normal(rng), normal(rng)};
    const double norm = std::sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
    for (double& x : g) x /= norm;
    c.scheme.bvals.push_back(i % 2 == 0 ? 1000.0 : 2500.0);
    c.scheme.bvecs.push_back(g);
  }
  for (int v = 0; v < voxels; ++v) {
    BallStickParams p;
    p.s0 = 800.0 + 400.0 * uniform(rng);
    p.d = 0.0008 + 0.0006 * uniform(rng);
    p.d_std = 0.3 * p.d;
    p.tau = 1.0 / (25.0 * 25.0);
    const int present = 1 + v % fibres;
    for (int j = 0; j < fibres; ++j) {
      const auto k = static_cast<size_t>(j);
      p.th[k] = std::acos(2.0 * uniform(rng) - 1.0);
      p.ph[k] = 2.0 * std::numbers::pi * uniform(rng);
      p.f[k] = j < present ? 0.5 / (j + 1) : 0.02;
    }
    c.truth.push_back(p);
    const std::vector<double> s = ball_stick_signal(c.scheme, p, fibres, 2);
    for (const double x : s) {
      const double re = x + 25.0 * normal(rng), im = 25.0 * normal(rng);
      c.data.push_back(static_cast<float>(rician ? std::sqrt(re * re + im * im) : re));
    }
    BallStickParams q = p;
    q.s0 *= 1.0 + 0.05 * normal(rng);
    q.d *= 1.0 + 0.1 * normal(rng);
    for (int j = 0; j < fibres; ++j) {
      const auto k = static_cast<size_t>(j);
      q.th[k] += 0.1 * normal(rng);
      q.ph[k] += 0.1 * normal(rng);
      q.f[k] = std::clamp(q.f[k] + 0.03 * normal(rng), 0.01, 0.6);
    }
    c.init.push_back(q);
  }
  return c;
}

std::vector<double> voxel_data(const Case& c, int v) {
  const auto n = static_cast<size_t>(c.scheme.measurements());
  return {c.data.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(v) * n),
          c.data.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(v + 1) * n)};
}

double relative(double a, double b) {
  return std::fabs(a - b) / std::max(1e-300, std::max(std::fabs(a), std::fabs(b)));
}

struct Variant {
  int fibres, model;
  bool rician;
  int lanes;  // work-items per voxel: the lanes' tree sum must take the reference's decisions too
};

TEST(BallStick, DoubleDeviceChainsEqualTheReference) {
  Device& device = test::test_device();
  if (!device.has_fp64()) GTEST_SKIP() << "the device has no fp64";
  const uint64_t seed = test::test_seed();
  const int voxels = 13, iterations = 90;
  for (const Variant variant : {Variant{1, 1, false, 1}, Variant{2, 1, false, 4}, Variant{3, 1, false, 32},
                                Variant{2, 2, false, 8}, Variant{2, 1, true, 2}, Variant{3, 2, true, 16}}) {
    SCOPED_TRACE(::testing::Message() << variant.fibres << " fibres, model " << variant.model
                                      << (variant.rician ? ", Rician" : ", Gaussian") << ", " << variant.lanes
                                      << " lane(s) per voxel");
    const Case c = make_case(seed + static_cast<uint64_t>(variant.fibres * 10 + variant.model), voxels, variant.fibres,
                             variant.rician);
    BallStickOptions o;
    o.fibres = variant.fibres;
    o.model = variant.model;
    o.rician = variant.rician;
    o.lanes = variant.lanes;
    o.burn_in = 50;
    o.update_proposal_every = 10;
    o.jumps = 40;
    o.sample_every = 4;
    o.seed = seed;
    const uint32_t first_voxel = 1000;
    const std::vector<double> trace =
        ball_stick_trace(device, c.scheme, c.data, c.init, o, first_voxel, iterations, true);
    double worst = 0;
    int changed = 0, decisions_differ = 0;
    for (int v = 0; v < voxels; ++v) {
      const reference::BallStickChain r =
          reference::ball_stick_chain(c.scheme, voxel_data(c, v), c.init[static_cast<size_t>(v)], o,
                                      first_voxel + static_cast<uint32_t>(v), true, iterations);
      ASSERT_EQ(r.states.size(), static_cast<size_t>(iterations));
      const auto device_value = [&](int it, int k) {
        return trace[(static_cast<size_t>(it) * kBallStickQuantities + static_cast<size_t>(k)) *
                         static_cast<size_t>(voxels) +
                     static_cast<size_t>(v)];
      };
      for (int k = 0; k < kBallStickQuantities; ++k) {
        // Differences relative to the quantity's largest magnitude along the chain (angles and fractions cross 0).
        double scale = 1e-300;
        for (int it = 0; it < iterations; ++it) {
          scale = std::max(scale, std::fabs(r.states[static_cast<size_t>(it)][static_cast<size_t>(k)]));
        }
        for (int it = 0; it < iterations; ++it) {
          const double ref = r.states[static_cast<size_t>(it)][static_cast<size_t>(k)];
          const double error = std::fabs(device_value(it, k) - ref) / scale;
          if (error > 1e-12 && worst <= 1e-12) {
            ADD_FAILURE() << "voxel " << v << " quantity " << k << " iteration " << it << ": device "
                          << device_value(it, k) << ", reference " << ref;
          }
          worst = std::max(worst, error);
          if (it > 0) {
            const bool ref_moved = ref != r.states[static_cast<size_t>(it - 1)][static_cast<size_t>(k)];
            const bool device_moved = device_value(it, k) != device_value(it - 1, k);
            changed += ref_moved ? 1 : 0;
            decisions_differ += ref_moved != device_moved ? 1 : 0;
          }
        }
      }
    }
    EXPECT_LE(worst, 1e-12);
    EXPECT_EQ(decisions_differ, 0);
    EXPECT_GT(changed, voxels * iterations);  // the chains move: many accepted proposals
  }
}

TEST(BallStick, FloatDeviceChainsFollowTheReference) {
  Device& device = test::test_device();
  const uint64_t seed = test::test_seed();
  const int voxels = 13, iterations = 30;
  const Case c = make_case(seed, voxels, 2, false);
  BallStickOptions o;
  o.fibres = 2;
  o.burn_in = 20;
  o.update_proposal_every = 10;
  o.jumps = 10;
  o.sample_every = 5;
  o.seed = seed;
  const std::vector<double> trace = ball_stick_trace(device, c.scheme, c.data, c.init, o, 0, iterations, false);
  int following = 0;
  for (int v = 0; v < voxels; ++v) {
    const reference::BallStickChain r = reference::ball_stick_chain(
        c.scheme, voxel_data(c, v), c.init[static_cast<size_t>(v)], o, static_cast<uint32_t>(v), true, iterations);
    double worst = 0;
    for (int it = 0; it < iterations; ++it) {
      for (int k = 0; k < kBallStickQuantities; ++k) {
        const double d = trace[(static_cast<size_t>(it) * kBallStickQuantities + static_cast<size_t>(k)) *
                                   static_cast<size_t>(voxels) +
                               static_cast<size_t>(v)];
        worst = std::max(worst, relative(d, r.states[static_cast<size_t>(it)][static_cast<size_t>(k)]));
      }
    }
    if (worst < 1e-4) ++following;
  }
  // A float energy decides otherwise only within ~1e-6 of log u's bound: rare in 30 x 8 decisions per voxel.
  EXPECT_GE(following, voxels - 2);
}

TEST(BallStick, SamplesAndMeansAreTheReferencesAndBlocksChangeNothing) {
  Device& device = test::test_device();
  if (!device.has_fp64()) GTEST_SKIP() << "the device has no fp64";
  const uint64_t seed = test::test_seed();
  const int voxels = 11;
  const Case c = make_case(seed, voxels, 3, false);
  BallStickOptions o;
  o.fibres = 3;
  o.burn_in = 40;
  o.update_proposal_every = 10;
  o.jumps = 300;  // more than one launch of iterations
  o.sample_every = 6;
  o.seed = seed + 1;
  const BallStickRun run = ball_stick_mcmc(device, c.scheme, c.data, c.init, o, 0, {}, true);
  ASSERT_EQ(run.samples, 50);
  for (int v = 0; v < voxels; ++v) {
    const reference::BallStickChain r = reference::ball_stick_chain(
        c.scheme, voxel_data(c, v), c.init[static_cast<size_t>(v)], o, static_cast<uint32_t>(v));
    ASSERT_EQ(r.samples.size(), 50u);
    double s0 = 0, d = 0;
    for (int s = 0; s < run.samples; ++s) {
      const BallStickVector& ref = r.samples[static_cast<size_t>(s)];
      s0 += ref[kParS0];
      d += ref[kParD];
      for (int j = 0; j < 3; ++j) {
        // Stored as float: within a float's rounding of the reference's value (angles and fractions on the scale 1).
        const auto k = static_cast<size_t>(fibre_par(j, 0));
        EXPECT_NEAR(run.th(j, s)[v], ref[k], 1e-6 * std::max(1.0, std::fabs(ref[k])))
            << "voxel " << v << " sample " << s;
        EXPECT_NEAR(run.ph(j, s)[v], ref[k + 1], 1e-6 * std::max(1.0, std::fabs(ref[k + 1])))
            << "voxel " << v << " sample " << s;
        EXPECT_NEAR(run.f(j, s)[v], ref[k + 2], 1e-7) << "voxel " << v << " sample " << s;
      }
    }
    EXPECT_NEAR(run.mean_s0[static_cast<size_t>(v)], s0 / 50, 1e-9 * s0 / 50);
    EXPECT_NEAR(run.mean_d[static_cast<size_t>(v)], d / 50, 1e-9 * d / 50);
  }
  // The same voxels in two calls (a split over devices or hosts): identical draws.
  const auto split = static_cast<size_t>(5);
  const auto n = static_cast<size_t>(c.scheme.measurements());
  const std::vector<BallStickParams> init_a(c.init.begin(), c.init.begin() + 5),
      init_b(c.init.begin() + 5, c.init.end());
  const std::vector<float> data_a(c.data.begin(), c.data.begin() + static_cast<std::ptrdiff_t>(split * n)),
      data_b(c.data.begin() + static_cast<std::ptrdiff_t>(split * n), c.data.end());
  // With several lanes per voxel too: blocks of 5 and 6 voxels leave lanes of padding in their work-groups.
  for (const auto& [use_double, lanes] : {std::pair{true, 0}, std::pair{false, 0}, std::pair{false, 4}}) {
    o.lanes = lanes;
    const BallStickRun whole = ball_stick_mcmc(device, c.scheme, c.data, c.init, o, 0, {}, use_double);
    const BallStickRun a = ball_stick_mcmc(device, c.scheme, data_a, init_a, o, 0, {}, use_double);
    const BallStickRun b = ball_stick_mcmc(device, c.scheme, data_b, init_b, o, 5, {}, use_double);
    for (int s = 0; s < whole.samples; ++s) {
      for (int j = 0; j < 3; ++j) {
        for (int v = 0; v < voxels; ++v) {
          const float expected = v < 5 ? a.th(j, s)[v] : b.th(j, s)[v - 5];
          ASSERT_EQ(whole.th(j, s)[v], expected) << "sample " << s << " fibre " << j << " voxel " << v;
          const float fe = v < 5 ? a.f(j, s)[v] : b.f(j, s)[v - 5];
          ASSERT_EQ(whole.f(j, s)[v], fe);
        }
      }
    }
  }
}

TEST(BallStick, RefusesBadInput) {
  Device& device = test::test_device();
  const Case c = make_case(1, 3, 1, false);
  BallStickOptions o;
  o.fibres = 4;
  EXPECT_THROW(ball_stick_mcmc(device, c.scheme, c.data, c.init, o), std::invalid_argument);
  o.fibres = 1;
  o.sample_every = 2000;  // no sample
  EXPECT_THROW(ball_stick_mcmc(device, c.scheme, c.data, c.init, o), std::invalid_argument);
  o.sample_every = 25;
  o.model = 3;
  EXPECT_THROW(ball_stick_mcmc(device, c.scheme, c.data, c.init, o), std::invalid_argument);
  o.model = 1;
  o.lanes = 3;  // not a power of two
  EXPECT_THROW(ball_stick_mcmc(device, c.scheme, c.data, c.init, o), std::invalid_argument);
  o.lanes = 64;
  EXPECT_THROW(ball_stick_mcmc(device, c.scheme, c.data, c.init, o), std::invalid_argument);
  o.lanes = 0;
  std::vector<float> short_data(c.data.begin(), c.data.end() - 1);
  EXPECT_THROW(ball_stick_mcmc(device, c.scheme, short_data, c.init, o), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
