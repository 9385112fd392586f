// The reference Gibbs sampler of the Bayesian GLM (core/reference/bayes_glm_reference.hpp): with rho fixed its
// (sigma^2, beta) draws are independent draws of the exact normal-inverse-gamma posterior, so Kolmogorov–Smirnov
// against the analytic marginals (inverse gamma for sigma^2, Student t for each beta) must pass; with rho sampled,
// the posterior means recover a synthetic truth (beta within 4 posterior SDs, rho within 0.08, sigma^2 within 15%) and
// beta's mean equals the GLS estimate at rho's posterior mean within 0.25 posterior SDs; the same coordinates replay
// the same chain. AR(4): on synthetic data the posterior means recover rho, beta and sigma^2 within 4 posterior SDs;
// the Levinson-Durbin stationarity check agrees with the companion matrix's spectral radius; every draw of a chain on
// a random walk is stationary and non-stationary proposals keep the previous rho. Fixed seeds: the statistics are
// the same on every run (KS critical value at alpha 0.001).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <array>
#include <boost/math/distributions/inverse_gamma.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "core/reference/bayes_glm_reference.hpp"
#include "tests/support/ks_statistic.hpp"

namespace rtf::reference {
namespace {

struct Synthetic {
  Eigen::VectorXd y;
  Eigen::MatrixXd x;
};

Synthetic synthetic(int t, const Eigen::Vector3d& beta, double rho, double sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  Synthetic s{Eigen::VectorXd(t), Eigen::MatrixXd(t, 3)};
  double e = normal(rng) * sigma / std::sqrt(1 - rho * rho);
  for (int k = 0; k < t; ++k) {
    s.x(k, 0) = 1.0;
    s.x(k, 1) = (k / 15) % 2 == 0 ? 1.0 : 0.0;  // a block design
    s.x(k, 2) = std::sin(0.07 * k);
    if (k > 0) e = rho * e + sigma * normal(rng);
    s.y(k) = s.x.row(k).dot(beta) + e;
  }
  return s;
}

TEST(BayesGlmReference, FixedRhoDrawsFollowTheExactPosterior) {
  const Synthetic s = synthetic(120, {10.0, 2.0, -1.0}, 0.4, 2.0, 11);
  const BayesGlmPrior prior;
  const int draws = 4000;
  const BayesGlmChain c = bayes_glm_chain(s.y, s.x, prior, 5, 0, 0, draws, 0.4, true);
  // The analytic posterior at rho = 0.4.
  const int n = 119;
  const Eigen::MatrixXd xw = s.x.bottomRows(n) - 0.4 * s.x.topRows(n);
  const Eigen::VectorXd yw = s.y.tail(n) - 0.4 * s.y.head(n);
  const Eigen::MatrixXd precision = xw.transpose() * xw + prior.beta_precision * Eigen::MatrixXd::Identity(3, 3);
  const Eigen::VectorXd mean = precision.ldlt().solve(xw.transpose() * yw);
  const double a = prior.a0 + 0.5 * n, b = prior.b0 + 0.5 * (yw.squaredNorm() - mean.dot(xw.transpose() * yw));
  const double critical = 1.95 / std::sqrt(static_cast<double>(draws));
  const boost::math::inverse_gamma_distribution<double> sigma2_law(a, b);
  const double d_sigma2 = test::ks_statistic({c.sigma2.data(), c.sigma2.data() + draws},
                                             [&](double v) { return boost::math::cdf(sigma2_law, v); });
  EXPECT_LT(d_sigma2, critical);
  const Eigen::MatrixXd covariance = precision.inverse();
  const boost::math::students_t_distribution<double> t_law(2 * a);
  for (int k = 0; k < 3; ++k) {
    const double scale = std::sqrt(b / a * covariance(k, k));
    std::vector<double> draws_k(c.beta.col(k).data(), c.beta.col(k).data() + draws);
    const double d =
        test::ks_statistic(draws_k, [&](double v) { return boost::math::cdf(t_law, (v - mean(k)) / scale); });
    EXPECT_LT(d, critical) << "beta " << k;
    std::cout << "beta " << k << ": KS " << d << " (critical " << critical << ")\n";
  }
  std::cout << "sigma^2: KS " << d_sigma2 << "\n";
}

TEST(BayesGlmReference, RecoversTheTruthAndTheGlsEstimate) {
  const Eigen::Vector3d truth(10.0, 2.0, -1.0);
  const Synthetic s = synthetic(1000, truth, 0.5, 2.0, 23);
  const BayesGlmChain c = bayes_glm_chain(s.y, s.x, {}, 9, 4, 1, 3300);
  const int burn = 300, kept = 3000;
  const Eigen::MatrixXd beta = c.beta.bottomRows(kept);
  const Eigen::VectorXd beta_mean = beta.colwise().mean();
  const Eigen::VectorXd beta_sd =
      ((beta.rowwise() - beta_mean.transpose()).array().square().colwise().sum() / (kept - 1)).sqrt();
  const double rho_mean = c.rho.col(0).tail(kept).mean(), sigma2_mean = c.sigma2.tail(kept).mean();
  for (int k = 0; k < 3; ++k) EXPECT_LT(std::abs(beta_mean(k) - truth(k)), 4 * beta_sd(k)) << "beta " << k;
  EXPECT_NEAR(rho_mean, 0.5, 0.08);
  EXPECT_NEAR(sigma2_mean, 4.0, 0.6);
  // GLS at rho's posterior mean (conditional on the first volume, as the model).
  const int n = 999;
  const Eigen::MatrixXd xw = s.x.bottomRows(n) - rho_mean * s.x.topRows(n);
  const Eigen::VectorXd yw = s.y.tail(n) - rho_mean * s.y.head(n);
  const Eigen::VectorXd gls = (xw.transpose() * xw).ldlt().solve(xw.transpose() * yw);
  for (int k = 0; k < 3; ++k) EXPECT_LT(std::abs(beta_mean(k) - gls(k)), 0.25 * beta_sd(k)) << "beta " << k;
  std::cout << "posterior mean beta " << beta_mean.transpose() << " (sd " << beta_sd.transpose() << "), GLS "
            << gls.transpose() << ", rho " << rho_mean << ", sigma^2 " << sigma2_mean << " (burn-in " << burn << ")\n";
}

TEST(BayesGlmReference, SameCoordinatesReplayTheChain) {
  const Synthetic s = synthetic(80, {1.0, 0.5, 0.0}, 0.3, 1.0, 3);
  const BayesGlmChain a = bayes_glm_chain(s.y, s.x, {}, 42, 7, 0, 50);
  const BayesGlmChain b = bayes_glm_chain(s.y, s.x, {}, 42, 7, 0, 50);
  const BayesGlmChain other = bayes_glm_chain(s.y, s.x, {}, 42, 7, 1, 50);
  EXPECT_EQ(a.beta, b.beta);
  EXPECT_EQ(a.rho, b.rho);
  EXPECT_NE(a.beta, other.beta);
  EXPECT_THROW(bayes_glm_chain(s.y.head(4), s.x.topRows(4), {}, 1, 0, 0, 5), std::invalid_argument);
}

// y = x beta + AR(L) noise with coefficients `rho` (after a burn-in of 200 samples), the design of synthetic().
Synthetic synthetic_ar(int t, const Eigen::Vector3d& beta, const Eigen::VectorXd& rho, double sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  Synthetic s{Eigen::VectorXd(t), Eigen::MatrixXd(t, 3)};
  const auto order = static_cast<int>(rho.size());
  std::vector<double> e(static_cast<size_t>(t + 200), 0.0);
  for (int k = 0; k < t + 200; ++k) {
    double v = sigma * normal(rng);
    for (int j = 1; j <= order && k - j >= 0; ++j) v += rho(j - 1) * e[static_cast<size_t>(k - j)];
    e[static_cast<size_t>(k)] = v;
  }
  for (int k = 0; k < t; ++k) {
    s.x(k, 0) = 1.0;
    s.x(k, 1) = (k / 15) % 2 == 0 ? 1.0 : 0.0;
    s.x(k, 2) = std::sin(0.07 * k);
    s.y(k) = s.x.row(k).dot(beta) + e[static_cast<size_t>(k + 200)];
  }
  return s;
}

// The spectral radius of the AR polynomial's companion matrix (< 1: stationary).
double spectral_radius(const Eigen::VectorXd& rho) {
  const auto order = rho.size();
  Eigen::MatrixXd companion = Eigen::MatrixXd::Zero(order, order);
  companion.row(0) = rho.transpose();
  for (Eigen::Index k = 1; k < order; ++k) companion(k, k - 1) = 1.0;
  return companion.eigenvalues().cwiseAbs().maxCoeff();
}

TEST(BayesGlmReference, StepDownStationarityCheck) {
  // Known cases: AR(1) |rho| < 1; AR(2) inside and outside the triangle rho_2 +- rho_1 < 1, |rho_2| < 1; a unit root.
  const auto stationary = [](std::vector<double> rho) {
    return ar_is_stationary(rho.data(), static_cast<int>(rho.size()));
  };
  EXPECT_TRUE(stationary({0.99}));
  EXPECT_FALSE(stationary({-1.0}));
  EXPECT_FALSE(stationary({1.01}));
  EXPECT_TRUE(stationary({1.2, -0.5}));    // roots 1.2 +- 0.6i, modulus 1.41
  EXPECT_FALSE(stationary({0.5, 0.6}));    // rho_1 + rho_2 > 1
  EXPECT_FALSE(stationary({0.5, 0.5}));    // a unit root, z = 1
  EXPECT_FALSE(stationary({0.2, -1.05}));  // |rho_2| > 1
  EXPECT_TRUE(stationary({0.4, -0.2, 0.1, 0.05}));
  EXPECT_FALSE(stationary({0.4, 0.3, 0.2, 0.15}));  // sum 1.05: a real root inside (0, 1)
  EXPECT_FALSE(stationary({0.0, 0.0, 0.0, 1.0}));   // (1 - z^4): roots on the unit circle
  EXPECT_TRUE(stationary({0.0, 0.0, 0.0, 0.9}));
  // Against the companion matrix's spectral radius on random coefficient vectors of every order (clear of the
  // boundary).
  std::mt19937 rng(31);
  std::uniform_real_distribution<double> uniform(-1.6, 1.6);
  int agreed = 0, inside = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const int order = 1 + trial % 4;
    Eigen::VectorXd rho(order);
    for (int k = 0; k < order; ++k) rho(k) = uniform(rng) / (k + 1);
    const double radius = spectral_radius(rho);
    if (std::abs(radius - 1.0) < 1e-9) continue;
    ASSERT_EQ(ar_is_stationary(rho.data(), order), radius < 1.0)
        << "order " << order << ": " << rho.transpose() << ", spectral radius " << radius;
    ++agreed;
    inside += radius < 1.0 ? 1 : 0;
  }
  std::cout << agreed << " random coefficient vectors agree, " << inside << " of them stationary\n";
  EXPECT_GT(inside, 2000);
  EXPECT_GT(agreed - inside, 2000);
}

TEST(BayesGlmReference, Ar4RecoversTheTruth) {
  const Eigen::Vector3d truth(10.0, 2.0, -1.0);
  Eigen::VectorXd rho_truth(4);
  rho_truth << 0.4, -0.2, 0.1, 0.05;
  const Synthetic s = synthetic_ar(400, truth, rho_truth, 2.0, 41);
  const int burn = 300, kept = 4000;
  const BayesGlmChain c = bayes_glm_chain(s.y, s.x, {}, 13, 2, 0, burn + kept, Eigen::VectorXd::Zero(4));
  ASSERT_EQ(c.rho.cols(), 4);
  const auto mean_sd = [&](const Eigen::VectorXd& draws) {
    const Eigen::VectorXd d = draws.tail(kept);
    const double mean = d.mean();
    return std::array<double, 2>{mean, std::sqrt((d.array() - mean).square().sum() / (kept - 1))};
  };
  for (int k = 0; k < 4; ++k) {
    const auto [mean, sd] = mean_sd(c.rho.col(k));
    EXPECT_LT(std::abs(mean - rho_truth(k)), 4 * sd) << "rho " << k + 1;
    std::cout << "rho_" << k + 1 << ": posterior mean " << mean << " sd " << sd << " (truth " << rho_truth(k) << ")\n";
  }
  for (int k = 0; k < 3; ++k) {
    const auto [mean, sd] = mean_sd(c.beta.col(k));
    EXPECT_LT(std::abs(mean - truth(k)), 4 * sd) << "beta " << k;
    std::cout << "beta_" << k << ": posterior mean " << mean << " sd " << sd << " (truth " << truth(k) << ")\n";
  }
  // The conditional maximum likelihood estimate (iterated Cochrane-Orcutt to convergence: GLS beta at rho, rho by
  // least squares on the residuals' lags): with vague priors and 396 rows the posterior means are near it.
  Eigen::VectorXd rho_ml = Eigen::VectorXd::Zero(4), beta_ml;
  const int n = 396;
  for (int iteration = 0; iteration < 200; ++iteration) {
    Eigen::MatrixXd xw = s.x.bottomRows(n);
    Eigen::VectorXd yw = s.y.tail(n);
    for (int k = 1; k <= 4; ++k) {
      xw -= rho_ml(k - 1) * s.x.middleRows(4 - k, n);
      yw -= rho_ml(k - 1) * s.y.segment(4 - k, n);
    }
    beta_ml = (xw.transpose() * xw).ldlt().solve(xw.transpose() * yw);
    const Eigen::VectorXd e = s.y - s.x * beta_ml;
    Eigen::MatrixXd lagged(n, 4);
    for (int k = 1; k <= 4; ++k) lagged.col(k - 1) = e.segment(4 - k, n);
    rho_ml = (lagged.transpose() * lagged).ldlt().solve(lagged.transpose() * e.tail(n));
  }
  for (int k = 0; k < 4; ++k) {
    const auto [mean, sd] = mean_sd(c.rho.col(k));
    EXPECT_LT(std::abs(mean - rho_ml(k)), 0.5 * sd) << "rho " << k + 1;
  }
  for (int k = 0; k < 3; ++k) {
    const auto [mean, sd] = mean_sd(c.beta.col(k));
    EXPECT_LT(std::abs(mean - beta_ml(k)), 0.5 * sd) << "beta " << k;
  }
  std::cout << "conditional ML: rho " << rho_ml.transpose() << ", beta " << beta_ml.transpose() << "\n";
  const auto [sigma2_mean, sigma2_sd] = mean_sd(c.sigma2);
  EXPECT_LT(std::abs(sigma2_mean - 4.0), 4 * sigma2_sd);
  std::cout << "sigma^2: posterior mean " << sigma2_mean << " sd " << sigma2_sd << " (truth 4)\n";
  for (int step = 0; step < burn + kept; ++step) {
    const Eigen::VectorXd r = c.rho.row(step).transpose();
    ASSERT_TRUE(ar_is_stationary(r.data(), 4)) << "step " << step;
  }
}

// On a random walk (a unit root) the rho conditional straddles the stationary region's edge: many proposals are
// refused, and each refusal keeps the previous rho exactly; no kept value is non-stationary.
TEST(BayesGlmReference, NonStationaryDrawsKeepTheCurrentRho) {
  for (const int order : {1, 2, 4}) {
    SCOPED_TRACE(::testing::Message() << "AR(" << order << ")");
    std::mt19937 rng(5);
    std::normal_distribution<double> normal;
    const int t = 150;
    Eigen::VectorXd y(t);
    Eigen::MatrixXd x = Eigen::MatrixXd::Ones(t, 1);
    double walk = 0;
    for (int k = 0; k < t; ++k) y(k) = (walk += normal(rng));
    const BayesGlmChain c = bayes_glm_chain(y, x, {}, 3, 0, 0, 400, Eigen::VectorXd::Zero(order));
    int kept_old = 0;
    for (int step = 1; step < 400; ++step) {
      const Eigen::VectorXd r = c.rho.row(step).transpose();
      ASSERT_TRUE(ar_is_stationary(r.data(), order)) << "step " << step << ": " << r.transpose();
      if (c.rho.row(step) == c.rho.row(step - 1)) ++kept_old;
    }
    std::cout << "AR(" << order << ") on a random walk: " << kept_old << " of 399 steps kept the previous rho\n";
    EXPECT_GT(kept_old, 10);
    EXPECT_LT(kept_old, 399);
  }
  EXPECT_THROW(bayes_glm_chain(Eigen::VectorXd::Ones(10), Eigen::MatrixXd::Ones(10, 1), {}, 1, 0, 0, 5,
                               Eigen::VectorXd::Zero(5)),
               std::invalid_argument);
  EXPECT_THROW(
      bayes_glm_chain(Eigen::VectorXd::Ones(6), Eigen::MatrixXd::Ones(6, 2), {}, 1, 0, 0, 5, Eigen::VectorXd::Zero(4)),
      std::invalid_argument);  // 6 volumes: fewer than P + L + 1
}

}  // namespace
}  // namespace rtf::reference
