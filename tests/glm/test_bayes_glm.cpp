// ctest-label: gpu
// The device's Gibbs chains (core/glm/bayes_glm.hpp, kernels/bayes_glm.cl) against the double reference
// (core/reference/bayes_glm_reference.hpp) draw for draw: the same seed, voxel and chain give every step's beta,
// sigma^2 and rho within 1e-5 of the chain's own spread of that quantity (both in double on the same Philox words; the
// device takes the residual sums as quadratics in beta, the reference from the residuals), on odd sizes (37 voxels, 61
// volumes, P = 1, 3, 5, two chains, AR(1) noise from rho -0.3 to 0.6, a large offset as BOLD has; chains whose rho
// nears 1 leave the intercept nearly unidentified and amplify the double functions' last-bit differences step by step,
// so the data stop at 0.6 and a chain is compared up to its first rho above 0.98); likewise for AR(4) noise (P = 1, 3).
// The summaries equal the textbook statistics of the reference's chains for AR(1) and AR(4). Bad input is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/glm/bayes_glm.hpp"
#include "core/reference/bayes_glm_reference.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

Eigen::MatrixXd design_of(int t, int p) {
  Eigen::MatrixXd x(t, p);
  for (int k = 0; k < t; ++k) {
    for (int j = 0; j < p; ++j) {
      x(k, j) = j == 0 ? 1.0 : std::sin(0.05 * (j + 1) * k + j) + ((k / (7 + j)) % 2 == 0 ? 0.5 : 0.0);
    }
  }
  return x;
}

// The last step of a reference chain to compare: the first whose rho sums above 0.98 (past it the intercept is nearly
// unidentified and the chains' last-bit differences grow without bound), else the last step.
int last_compared_step(const reference::BayesGlmChain& r) {
  for (Eigen::Index s = 0; s < r.rho.rows(); ++s) {
    if (r.rho.row(s).sum() > 0.98) return static_cast<int>(s);
  }
  return static_cast<int>(r.rho.rows()) - 1;
}

// Steps 0 .. last of the device's chain (v, c) against the reference's: every quantity within 1e-5 of the reference
// chain's own spread of it (near rho = 1 the intercept's draws range over thousands, and rounding differences scale
// with that spread). Returns the worst difference.
double compare_chain(const BayesGlmChains& d, const reference::BayesGlmChain& r, int v, int c, int last) {
  const int p = d.regressors, order = d.order;
  const auto spread = [](const Eigen::VectorXd& draws) {
    return std::sqrt((draws.array() - draws.mean()).square().mean()) + 1e-9 * (1.0 + draws.cwiseAbs().maxCoeff());
  };
  std::vector<double> scale(static_cast<size_t>(p + 1 + order));
  for (int k = 0; k < p; ++k) scale[static_cast<size_t>(k)] = spread(r.beta.col(k));
  scale[static_cast<size_t>(p)] = spread(r.sigma2);
  for (int k = 0; k < order; ++k) scale[static_cast<size_t>(p + 1 + k)] = spread(r.rho.col(k));
  double worst = 0;
  for (int s = 0; s <= last; ++s) {
    const auto close = [&](double device, double ref, int quantity) {
      const double err = std::abs(device - ref) / scale[static_cast<size_t>(quantity)];
      worst = std::max(worst, err);
      ASSERT_LT(err, 1e-5) << "quantity " << quantity << " voxel " << v << " chain " << c << " step " << s << ": "
                           << device << " vs " << ref;
    };
    for (int k = 0; k < p; ++k) close(d.beta(v, c, s, k), r.beta(s, k), k);
    close(d.sigma2(v, c, s), r.sigma2(s), p);
    for (int k = 0; k < order; ++k) close(d.rho(v, c, s, k), r.rho(s, k), p + 1 + k);
  }
  return worst;
}

TEST(BayesGlm, DeviceChainsEqualTheReference) {
  const uint64_t seed = test::test_seed();
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::normal_distribution<double> normal;
  const int voxels = 37, t = 61, chains = 2, steps = 40;
  for (const int p : {1, 3, 5}) {
    SCOPED_TRACE(::testing::Message() << p << " regressors");
    const Eigen::MatrixXd x = design_of(t, p);
    std::vector<float> series(static_cast<size_t>(voxels * t));
    for (int v = 0; v < voxels; ++v) {
      const double rho = -0.3 + 0.9 * v / (voxels - 1);
      double e = 0;
      for (int k = 0; k < t; ++k) {
        e = rho * e + 3.0 * normal(rng);
        double value = 1000.0 + e;
        for (int j = 1; j < p; ++j) value += (j - 2.0) * x(k, j);
        series[static_cast<size_t>(v * t + k)] = static_cast<float>(value);
      }
    }
    const BayesGlmPrior prior;
    const BayesGlmChains d = bayes_glm_chains(test::test_device(), series, voxels, x, prior, seed, chains, steps, 0.1);
    double worst = 0;
    for (int v = 0; v < voxels; ++v) {
      Eigen::VectorXd y(t);
      for (int k = 0; k < t; ++k) y(k) = series[static_cast<size_t>(v * t + k)];
      for (int c = 0; c < chains; ++c) {
        const reference::BayesGlmChain r = reference::bayes_glm_chain(y, x, prior, seed, static_cast<uint32_t>(v),
                                                                      static_cast<uint32_t>(c), steps, 0.1);
        worst = std::max(worst, compare_chain(d, r, v, c, last_compared_step(r)));
      }
    }
    std::cout << p << " regressors: worst relative difference " << worst << "\n";
  }
}

// AR(4): the same comparison on 37 voxels, 61 volumes, P = 1 and 3, noise with rho = (r, -0.2, 0.1, 0.05), r from -0.3
// to 0.5, chains from rho = 0 (the device draws rho_3, rho_4 from slot 16, checks stationarity by the step-down
// recursion; the tolerance is the AR(1) test's). With 57 whitened rows and the vague beta prior, about one chain in
// ten walks onto the posterior's ridge sum rho -> 1, where the whitened intercept (1 - sum rho) vanishes: the
// intercept's draws range over thousands and the chain amplifies the double functions' last-bit differences step by
// step (the AR(1) test's rho near 1, which no choice of these data avoids for AR(4)). A chain is compared up to and
// including the step whose rho first has sum > 0.98 (docs/algorithms/bayes_glm.md), and most are compared whole.
TEST(BayesGlm, Ar4DeviceChainsEqualTheReference) {
  const uint64_t seed = test::test_seed();
  std::mt19937 rng(static_cast<uint32_t>(seed) + 4);
  std::normal_distribution<double> normal;
  const int voxels = 37, t = 61, chains = 2, steps = 40, order = 4;
  for (const int p : {1, 3}) {
    SCOPED_TRACE(::testing::Message() << p << " regressors");
    const Eigen::MatrixXd x = design_of(t, p);
    std::vector<float> series(static_cast<size_t>(voxels * t));
    for (int v = 0; v < voxels; ++v) {
      const double rho[4] = {-0.3 + 0.8 * v / (voxels - 1), -0.2, 0.1, 0.05};
      std::vector<double> e(static_cast<size_t>(t + 50), 0.0);
      for (int k = 0; k < t + 50; ++k) {
        double value = 3.0 * normal(rng);
        for (int j = 1; j <= 4 && k >= j; ++j) value += rho[j - 1] * e[static_cast<size_t>(k - j)];
        e[static_cast<size_t>(k)] = value;
      }
      for (int k = 0; k < t; ++k) {
        double value = 1000.0 + e[static_cast<size_t>(k + 50)];
        for (int j = 1; j < p; ++j) value += (j - 2.0) * x(k, j);
        series[static_cast<size_t>(v * t + k)] = static_cast<float>(value);
      }
    }
    const BayesGlmPrior prior;
    const BayesGlmChains d =
        bayes_glm_chains(test::test_device(), series, voxels, x, prior, seed, chains, steps, 0.0, order);
    ASSERT_EQ(d.order, order);
    double worst = 0;
    int moves = 0, compared = 0, whole = 0;
    for (int v = 0; v < voxels; ++v) {
      Eigen::VectorXd y(t);
      for (int k = 0; k < t; ++k) y(k) = series[static_cast<size_t>(v * t + k)];
      for (int c = 0; c < chains; ++c) {
        const reference::BayesGlmChain r = reference::bayes_glm_chain(
            y, x, prior, seed, static_cast<uint32_t>(v), static_cast<uint32_t>(c), steps, Eigen::VectorXd::Zero(order));
        const int last = last_compared_step(r);
        whole += last == steps - 1 ? 1 : 0;
        worst = std::max(worst, compare_chain(d, r, v, c, last));
        compared += last + 1;
        for (int s = 1; s <= last; ++s) moves += r.rho.row(s) != r.rho.row(s - 1) ? 1 : 0;
      }
    }
    std::cout << p << " regressors, AR(4): worst relative difference " << worst << " over " << compared << " of "
              << voxels * chains * steps << " steps (" << whole << " of " << voxels * chains
              << " chains whole), rho moved in " << moves << "\n";
    EXPECT_GT(whole, voxels * chains * 3 / 4);
  }
}

// Series of `voxels` voxels: 1000 + the design's effects + AR(1) noise with rho from rho_low to rho_high.
std::vector<float> series_of(const Eigen::MatrixXd& x, const Eigen::VectorXd& beta, int voxels, double rho_low,
                             double rho_high, double sigma, std::mt19937& rng) {
  std::normal_distribution<double> normal;
  const auto t = static_cast<int>(x.rows());
  std::vector<float> series(static_cast<size_t>(voxels * t));
  for (int v = 0; v < voxels; ++v) {
    const double rho = rho_low + (rho_high - rho_low) * v / std::max(1, voxels - 1);
    double e = 0;
    for (int k = 0; k < t; ++k) {
      e = rho * e + sigma * normal(rng);
      series[static_cast<size_t>(v * t + k)] = static_cast<float>(x.row(k).dot(beta) + e);
    }
  }
  return series;
}

// The kernel's running sums, combined on the host, against the same statistics computed directly from the
// reference's chains (means, SDs, PPMs; split-R-hat and batch-means ESS by their textbook formulas).
// AR(`order`) from rho = (rho0, 0, .., 0), `t` volumes; monitored: 2 contrasts, sigma^2, rho_1 .. rho_L.
void expect_summary_equals_reference_statistics(int order, double rho0, int t) {
  const uint64_t seed = test::test_seed();
  std::mt19937 rng(static_cast<uint32_t>(seed));
  const int voxels = 9, chains = 3, steps = 200, burn = 40, kept = steps - burn;
  const Eigen::MatrixXd x = design_of(t, 3);
  const std::vector<float> series = series_of(x, Eigen::Vector3d(1000.0, 0.8, -0.5), voxels, -0.2, 0.5, 2.0, rng);
  Eigen::MatrixXd contrasts(2, 3);
  contrasts << 0, 1, 0, 0, 1, -1;
  const BayesGlmSummary d =
      bayes_glm_summary(test::test_device(), series, voxels, x, contrasts, {}, seed, chains, steps, burn, rho0, order);
  const int quantities = 3 + order;
  ASSERT_EQ(d.order, order);
  ASSERT_EQ(d.mean.size(), static_cast<size_t>(quantities));
  for (int v = 0; v < voxels; ++v) {
    Eigen::VectorXd y(t);
    for (int k = 0; k < t; ++k) y(k) = series[static_cast<size_t>(v * t + k)];
    std::vector<Eigen::MatrixXd> q(chains);  // kept draws x quantities (2 contrasts, sigma^2, rho_1 .. rho_L)
    Eigen::VectorXd start = Eigen::VectorXd::Zero(order);
    start(0) = rho0;
    for (int c = 0; c < chains; ++c) {
      const reference::BayesGlmChain r =
          reference::bayes_glm_chain(y, x, {}, seed, static_cast<uint32_t>(v), static_cast<uint32_t>(c), steps, start);
      q[static_cast<size_t>(c)].resize(kept, quantities);
      for (int k = 0; k < kept; ++k) {
        const Eigen::VectorXd b = r.beta.row(burn + k).transpose();
        q[static_cast<size_t>(c)](k, 0) = contrasts.row(0).dot(b);
        q[static_cast<size_t>(c)](k, 1) = contrasts.row(1).dot(b);
        q[static_cast<size_t>(c)](k, 2) = r.sigma2(burn + k);
        for (int j = 0; j < order; ++j) q[static_cast<size_t>(c)](k, 3 + j) = r.rho(burn + k, j);
      }
    }
    for (int m = 0; m < quantities; ++m) {
      SCOPED_TRACE(::testing::Message() << "voxel " << v << " quantity " << m);
      std::vector<double> all, half_means, half_vars;
      double ess = 0;
      int positive = 0;
      for (int c = 0; c < chains; ++c) {
        const Eigen::VectorXd z = q[static_cast<size_t>(c)].col(m);
        for (int k = 0; k < kept; ++k) {
          all.push_back(z(k));
          positive += z(k) > 0 ? 1 : 0;
        }
        for (int h = 0; h < 2; ++h) {
          const Eigen::VectorXd part = z.segment(h * kept / 2, kept / 2);
          half_means.push_back(part.mean());
          half_vars.push_back((part.array() - part.mean()).square().sum() / (kept / 2 - 1));
        }
        const int b = kept / 16;
        Eigen::VectorXd batch_means(16);
        for (int j = 0; j < 16; ++j) batch_means(j) = z.segment(j * b, b).mean();
        const double sigma2_bm = b * (batch_means.array() - batch_means.mean()).square().sum() / 15;
        const double chain_var = (z.array() - z.mean()).square().sum() / (kept - 1);
        ess += 16.0 * b * chain_var / sigma2_bm;
      }
      const Eigen::Map<Eigen::VectorXd> a(all.data(), static_cast<Eigen::Index>(all.size()));
      const double mean = a.mean(), sd = std::sqrt((a.array() - mean).square().sum() / (a.size() - 1));
      const Eigen::Map<Eigen::VectorXd> hm(half_means.data(), 6), hv(half_vars.data(), 6);
      const double n = kept / 2.0, w = hv.mean(), between = n * (hm.array() - hm.mean()).square().sum() / 5;
      const double r_hat = std::sqrt(((n - 1) / n * w + between / n) / w);
      const auto at = static_cast<size_t>(m), vv = static_cast<size_t>(v);
      EXPECT_NEAR(d.mean[at][vv], mean, 1e-6 * (sd + std::abs(mean)));
      EXPECT_NEAR(d.sd[at][vv], sd, 1e-6 * sd);
      EXPECT_NEAR(d.r_hat[at][vv], r_hat, 1e-6);
      EXPECT_NEAR(d.ess[at][vv], ess, 1e-6 * ess);
      if (m < 2) {
        EXPECT_NEAR(d.ppm[at][vv], positive / static_cast<double>(chains * kept), 1.5 / (chains * kept));
      }
    }
  }
}

TEST(BayesGlm, SummaryEqualsStatisticsOfTheReferenceChains) {
  expect_summary_equals_reference_statistics(1, 0.1, 61);
}

// AR(4) on 161 volumes: with 61, 200 steps take a chain onto the ridge sum rho -> 1 now and then (see
// Ar4DeviceChainsEqualTheReference), where device and reference drift apart by rounding.
TEST(BayesGlm, Ar4SummaryEqualsStatisticsOfTheReferenceChains) {
  expect_summary_equals_reference_statistics(4, 0.0, 161);
}

// Converged chains on synthetic data: split-R-hat near 1, a usable ESS, posterior means near the truth, PPMs near 1
// for a strong positive effect and near 0 for a strong negative one.
TEST(BayesGlm, ChainsConvergeToTheTruth) {
  std::mt19937 rng(77);
  const int voxels = 24, t = 200, chains = 4, steps = 1100, burn = 100;
  const Eigen::MatrixXd x = design_of(t, 3);
  const Eigen::Vector3d truth(1000.0, 3.0, -2.0);
  const std::vector<float> series = series_of(x, truth, voxels, 0.0, 0.5, 2.0, rng);
  Eigen::MatrixXd contrasts(2, 3);
  contrasts << 0, 1, 0, 0, 0, 1;
  const BayesGlmSummary d =
      bayes_glm_summary(test::test_device(), series, voxels, x, contrasts, {}, 5, chains, steps, burn);
  double worst_r_hat = 0, least_ess = 1e300;
  for (int v = 0; v < voxels; ++v) {
    const auto vv = static_cast<size_t>(v);
    for (int m = 0; m < 2; ++m) {
      const auto at = static_cast<size_t>(m);
      EXPECT_LT(std::abs(d.mean[at][vv] - truth(m + 1)), 4 * d.sd[at][vv]) << "voxel " << v << " contrast " << m;
      worst_r_hat = std::max(worst_r_hat, d.r_hat[at][vv]);
      least_ess = std::min(least_ess, d.ess[at][vv]);
    }
    EXPECT_GT(d.ppm[0][vv], 0.999);
    EXPECT_LT(d.ppm[1][vv], 0.001);
  }
  std::cout << "worst split-R-hat " << worst_r_hat << ", least ESS " << least_ess << " of " << chains * (steps - burn)
            << " draws\n";
  EXPECT_LT(worst_r_hat, 1.05);
  EXPECT_GT(least_ess, 400.0);
}

TEST(BayesGlm, BadInputIsRefused) {
  const Eigen::MatrixXd x = design_of(10, 3);
  EXPECT_THROW(bayes_glm_chains(test::test_device(), std::vector<float>(9 * 2), 2, x, {}, 1, 1, 5),
               std::invalid_argument);
  EXPECT_THROW(bayes_glm_chains(test::test_device(), std::vector<float>(4), 1, design_of(4, 3), {}, 1, 1, 5),
               std::invalid_argument);
  EXPECT_THROW(bayes_glm_chains(test::test_device(), std::vector<float>(40), 2, design_of(20, 17), {}, 1, 1, 5),
               std::invalid_argument);
  EXPECT_THROW(bayes_glm_chains(test::test_device(), std::vector<float>(20), 2, x, {}, 1, 1, 5, 0.0, 5),
               std::invalid_argument);  // AR(5)
  EXPECT_THROW(bayes_glm_chains(test::test_device(), std::vector<float>(12), 2, design_of(6, 2), {}, 1, 1, 5, 0.0, 4),
               std::invalid_argument);  // 6 volumes: fewer than P + L + 1
  const Eigen::MatrixXd one_contrast = Eigen::MatrixXd::Ones(1, 3);
  EXPECT_THROW(bayes_glm_summary(test::test_device(), std::vector<float>(20), 2, x, one_contrast, {}, 1, 1, 40, 20),
               std::invalid_argument);  // 20 kept draws: fewer than two per batch
  EXPECT_THROW(bayes_glm_summary(test::test_device(), std::vector<float>(20), 2, x, Eigen::MatrixXd::Ones(1, 2), {}, 1,
                                 1, 100, 10),
               std::invalid_argument);  // contrast of the wrong length
}

}  // namespace
}  // namespace rtf
