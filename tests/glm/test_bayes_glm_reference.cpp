// The reference Gibbs sampler of the Bayesian GLM (core/reference/bayes_glm_reference.hpp): with rho fixed its
// (sigma^2, beta) draws are independent draws of the exact normal-inverse-gamma posterior, so Kolmogorov–Smirnov
// against the analytic marginals (inverse gamma for sigma^2, Student t for each beta) must pass; with rho sampled,
// the posterior means recover a synthetic truth (beta within 4 posterior SDs, rho within 0.08, sigma^2 within 15%) and
// beta's mean equals the GLS estimate at rho's posterior mean within 0.25 posterior SDs; the same coordinates replay
// the same chain. Fixed seeds: the statistics are the same on every run (KS critical value at alpha 0.001).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
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
  const double rho_mean = c.rho.tail(kept).mean(), sigma2_mean = c.sigma2.tail(kept).mean();
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

}  // namespace
}  // namespace rtf::reference
