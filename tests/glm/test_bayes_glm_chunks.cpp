// ctest-label: gpu
// The Bayesian GLM split into voxel blocks (how `rtfmri glm --bayes` spreads over devices and ranks): the summaries
// and the chains of two blocks, each run on its own Device object with its first voxel's index (first_voxel), equal
// those of the whole set bit for bit, on fresh random data of odd sizes (AR(1) and AR(2) noise, a random split point);
// the same block run with first_voxel 0 draws other chains (so the comparison can fail).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/glm/bayes_glm.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

Eigen::MatrixXd design_of(int t, int p) {
  Eigen::MatrixXd x(t, p);
  for (int k = 0; k < t; ++k) {
    for (int j = 0; j < p; ++j) x(k, j) = j == 0 ? 1.0 : std::sin(0.07 * (j + 1) * k + j);
  }
  return x;
}

// Voxels of AR(1) noise around an offset with a random effect of each regressor, [voxel][T].
std::vector<float> random_series(std::mt19937& rng, const Eigen::MatrixXd& x, int voxels) {
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(-0.3, 0.6);
  const auto t = static_cast<int>(x.rows());
  std::vector<float> series;
  for (int v = 0; v < voxels; ++v) {
    const double rho = uniform(rng);
    Eigen::VectorXd beta(x.cols());
    for (Eigen::Index j = 0; j < x.cols(); ++j) beta(j) = j == 0 ? 500.0 + 50.0 * normal(rng) : 3.0 * normal(rng);
    double e = 0;
    for (int k = 0; k < t; ++k) {
      e = rho * e + 2.0 * normal(rng);
      series.push_back(static_cast<float>(x.row(k).dot(beta) + e));
    }
  }
  return series;
}

std::vector<float> slice(const std::vector<float>& series, int t, int begin, int end) {
  return {series.begin() + static_cast<std::ptrdiff_t>(begin) * t,
          series.begin() + static_cast<std::ptrdiff_t>(end) * t};
}

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof(double)) == 0;
}

// Every statistic of voxel `v` of `part` against voxel `offset + v` of `whole`, bit for bit (NaNs alike).
void expect_block_equal(const BayesGlmSummary& whole, const BayesGlmSummary& part, int offset) {
  const auto check = [&](const std::vector<std::vector<double>>& w, const std::vector<std::vector<double>>& p,
                         const char* what) {
    ASSERT_EQ(w.size(), p.size()) << what;
    for (size_t q = 0; q < w.size(); ++q) {
      for (int v = 0; v < part.voxels; ++v) {
        const double a = w[q][static_cast<size_t>(offset + v)], b = p[q][static_cast<size_t>(v)];
        ASSERT_TRUE(same_bits(a, b)) << what << " quantity " << q << " voxel " << offset + v << ": " << a << " vs "
                                     << b;
      }
    }
  };
  check(whole.mean, part.mean, "mean");
  check(whole.sd, part.sd, "sd");
  check(whole.ppm, part.ppm, "ppm");
  check(whole.r_hat, part.r_hat, "r_hat");
  check(whole.ess, part.ess, "ess");
}

TEST(BayesGlmChunks, TwoBlocksOnTwoDevicesEqualTheWholeBitForBit) {
  const uint64_t seed = test::test_seed();
  std::mt19937 rng(static_cast<uint32_t>(seed));
  Device& first = test::test_device();
  Device second(first.info());  // a second context and queue: the other block runs elsewhere
  const int voxels = 29, t = 53, chains = 2, steps = 75, burn = 11;
  for (const int order : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "AR(" << order << ")");
    const Eigen::MatrixXd x = design_of(t, 3);
    Eigen::MatrixXd contrasts(2, 3);
    contrasts << 0, 1, 0, 0, 1, -1;
    const std::vector<float> series = random_series(rng, x, voxels);
    const int split = 1 + static_cast<int>(rng() % (voxels - 1));
    SCOPED_TRACE(::testing::Message() << "split at " << split);
    const BayesGlmSummary whole =
        bayes_glm_summary(first, series, voxels, x, contrasts, {}, seed, chains, steps, burn, 0.1, order);
    const BayesGlmSummary a = bayes_glm_summary(first, slice(series, t, 0, split), split, x, contrasts, {}, seed,
                                                chains, steps, burn, 0.1, order, 0);
    const BayesGlmSummary b =
        bayes_glm_summary(second, slice(series, t, split, voxels), voxels - split, x, contrasts, {}, seed, chains,
                          steps, burn, 0.1, order, static_cast<uint32_t>(split));
    expect_block_equal(whole, a, 0);
    expect_block_equal(whole, b, split);
    // Keyed by the position in the call instead, the second block's chains differ (the check above can fail).
    const BayesGlmSummary unkeyed = bayes_glm_summary(second, slice(series, t, split, voxels), voxels - split, x,
                                                      contrasts, {}, seed, chains, steps, burn, 0.1, order, 0);
    int differing = 0;
    for (int v = 0; v < voxels - split; ++v) {
      differing +=
          same_bits(unkeyed.mean[0][static_cast<size_t>(v)], whole.mean[0][static_cast<size_t>(split + v)]) ? 0 : 1;
    }
    EXPECT_EQ(differing, voxels - split);
  }
}

TEST(BayesGlmChunks, ChainsOfABlockEqualTheWholesChains) {
  const uint64_t seed = test::test_seed();
  std::mt19937 rng(static_cast<uint32_t>(seed) ^ 0x5a5a5a5au);
  Device& device = test::test_device();
  const int voxels = 13, t = 31, chains = 3, steps = 9, p = 2, order = 3;
  const Eigen::MatrixXd x = design_of(t, p);
  const std::vector<float> series = random_series(rng, x, voxels);
  const BayesGlmChains whole = bayes_glm_chains(device, series, voxels, x, {}, seed, chains, steps, 0.0, order);
  const int begin = 5, end = 12;
  const BayesGlmChains part = bayes_glm_chains(device, slice(series, t, begin, end), end - begin, x, {}, seed, chains,
                                               steps, 0.0, order, static_cast<uint32_t>(begin));
  const size_t per_voxel = static_cast<size_t>(chains) * steps * (p + 1 + order);
  ASSERT_EQ(part.values.size(), per_voxel * (end - begin));
  EXPECT_EQ(std::memcmp(part.values.data(), whole.values.data() + per_voxel * begin, part.values.size() * 8), 0);
}

}  // namespace
}  // namespace rtf
