// ctest-label: gpu
// bedpost split into voxel blocks (how `rtfmri bedpost` spreads over devices and ranks): on fresh random synthetic
// voxels (odd counts, 2 fibres; model 1 Gaussian and model 2 Rician) the host initialisation of each block equals the
// whole's, and the chains of two blocks, each run on its own Device object with its first voxel's index, joined by
// join_ball_stick_runs, equal the whole run bit for bit: every draw, every mean, the acceptance counts. The same block
// run with first_voxel 0 draws other chains (so the comparison can fail). join_ball_stick_runs refuses mismatched
// blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numbers>
#include <random>
#include <vector>

#include "core/diffusion/ball_stick_init.hpp"
#include "core/diffusion/ball_stick_mcmc.hpp"
#include "core/diffusion/synthetic_dwi.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

bool same_params(const BallStickParams& a, const BallStickParams& b) {
  const BallStickVector x = pack_params(a), y = pack_params(b);
  return std::memcmp(x.data(), y.data(), sizeof(double) * x.size()) == 0;
}

std::vector<BallStickParams> random_truth(std::mt19937& rng, int voxels, int fibres) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<BallStickParams> truth;
  for (int v = 0; v < voxels; ++v) {
    BallStickParams p;
    p.s0 = 600.0 + 600.0 * uniform(rng);
    p.d = 0.0007 + 0.0008 * uniform(rng);
    p.d_std = 0.3 * p.d;
    for (int j = 0; j < fibres; ++j) {
      const auto k = static_cast<size_t>(j);
      p.th[k] = std::acos(2.0 * uniform(rng) - 1.0);
      p.ph[k] = 2.0 * std::numbers::pi * uniform(rng);
      p.f[k] = j == 0 ? 0.3 + 0.3 * uniform(rng) : 0.25 * uniform(rng);
    }
    truth.push_back(p);
  }
  return truth;
}

TEST(BallStickChunks, TwoBlocksOnTwoDevicesEqualTheWholeBitForBit) {
  const uint64_t seed = test::test_seed();
  std::mt19937 rng(static_cast<uint32_t>(seed));
  Device& first = test::test_device();
  Device second(first.info());  // a second context and queue: the other block runs elsewhere
  const DiffusionScheme scheme = synthetic_scheme(29, 3, 1500.0);
  const auto n = static_cast<size_t>(scheme.measurements());
  for (const int model : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "model " << model);
    const int voxels = 43, fibres = 2;
    const std::vector<float> data =
        synthetic_voxels(scheme, random_truth(rng, voxels, fibres), fibres, model, 25.0, model == 2, seed + model);
    BallStickOptions o;
    o.fibres = fibres;
    o.model = model;
    o.rician = model == 2;
    o.burn_in = 60;
    o.jumps = 40;
    o.sample_every = 4;
    o.update_proposal_every = 20;
    o.seed = seed;
    const int split = 1 + static_cast<int>(rng() % (voxels - 1));
    SCOPED_TRACE(::testing::Message() << "split at " << split);

    // The initialisation is per voxel: a block's equals the whole's.
    std::vector<uint8_t> fitted, fitted_a, fitted_b;
    const std::vector<BallStickParams> init =
        initialise_ball_stick(scheme, data.data(), voxels, fibres, model, &fitted);
    const std::vector<BallStickParams> init_a =
        initialise_ball_stick(scheme, data.data(), split, fibres, model, &fitted_a);
    const std::vector<BallStickParams> init_b =
        initialise_ball_stick(scheme, data.data() + split * n, voxels - split, fibres, model, &fitted_b);
    for (int v = 0; v < voxels; ++v) {
      const BallStickParams& block =
          v < split ? init_a[static_cast<size_t>(v)] : init_b[static_cast<size_t>(v - split)];
      ASSERT_TRUE(same_params(init[static_cast<size_t>(v)], block)) << "initial state of voxel " << v;
      ASSERT_EQ(fitted[static_cast<size_t>(v)],
                v < split ? fitted_a[static_cast<size_t>(v)] : fitted_b[static_cast<size_t>(v - split)]);
    }

    const std::vector<float> data_a(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(split * n));
    const std::vector<float> data_b(data.begin() + static_cast<std::ptrdiff_t>(split * n), data.end());
    const BallStickRun whole = ball_stick_mcmc(first, scheme, data, init, o, 0);
    const BallStickRun a = ball_stick_mcmc(first, scheme, data_a, init_a, o, 0);
    const BallStickRun b = ball_stick_mcmc(second, scheme, data_b, init_b, o, static_cast<uint32_t>(split));
    const BallStickRun joined = join_ball_stick_runs({a, b});
    ASSERT_EQ(joined.voxels, voxels);
    ASSERT_EQ(joined.samples, whole.samples);
    EXPECT_TRUE(same_bits(joined.draws, whole.draws));
    EXPECT_TRUE(same_bits(joined.mean_s0, whole.mean_s0));
    EXPECT_TRUE(same_bits(joined.mean_d, whole.mean_d));
    EXPECT_TRUE(same_bits(joined.mean_d_std, whole.mean_d_std));
    EXPECT_TRUE(same_bits(joined.mean_tau, whole.mean_tau));
    EXPECT_EQ(joined.accepted, whole.accepted);
    EXPECT_EQ(joined.rejected, whole.rejected);
    double accepted = 0;
    for (const double x : whole.accepted) accepted += x;
    EXPECT_GT(accepted, 0.0);

    // Keyed by the position in the call instead, the second block's chains differ.
    const BallStickRun unkeyed = ball_stick_mcmc(second, scheme, data_b, init_b, o, 0);
    const BallStickRun wrong = join_ball_stick_runs({a, unkeyed});
    EXPECT_FALSE(same_bits(wrong.draws, whole.draws));
  }
}

TEST(BallStickChunks, JoinRefusesMismatchedBlocks) {
  BallStickRun a, b;
  a.voxels = b.voxels = 1;
  a.fibres = b.fibres = 1;
  a.samples = 2;
  b.samples = 3;
  a.draws.assign(6, 0.0f);
  b.draws.assign(9, 0.0f);
  EXPECT_THROW(join_ball_stick_runs({a, b}), std::invalid_argument);
  b = a;
  b.draws.resize(5);
  EXPECT_THROW(join_ball_stick_runs({a, b}), std::invalid_argument);
  EXPECT_EQ(join_ball_stick_runs({}).voxels, 0);
}

}  // namespace
}  // namespace rtf
