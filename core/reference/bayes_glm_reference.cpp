// The reference Gibbs sampler: lag-0/lag-1 cross products once, then per step the whitened normal equations, a
// Cholesky factor, the normal-inverse-gamma draw and rho's conditional.
#include "core/reference/bayes_glm_reference.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Dense>
#include <cmath>
#include <stdexcept>

#include "core/random/draws.hpp"

namespace rtf::reference {

BayesGlmChain bayes_glm_chain(const Eigen::VectorXd& y, const Eigen::MatrixXd& design, const BayesGlmPrior& prior,
                              uint64_t seed, uint32_t voxel, uint32_t chain, int steps, double rho0, bool fix_rho) {
  const auto t = static_cast<int>(y.size());
  const auto p = static_cast<int>(design.cols());
  if (design.rows() != t || t < p + 2 || p < 1 || p > kBayesMaxRegressors) {
    throw std::invalid_argument("bayes_glm_chain: needs 1..16 regressors and at least P + 2 volumes");
  }
  const int n = t - 1;
  // Lag sums over t = 1 .. T-1 of the current row (x_t, y_t) against the previous one, accumulated in time order (as
  // the device does, so that both round alike).
  Eigen::MatrixXd s00 = Eigen::MatrixXd::Zero(p, p), s01 = s00, s11 = s00;
  Eigen::VectorXd m00 = Eigen::VectorXd::Zero(p), m01 = m00, m10 = m00, m11 = m00;
  double g00 = 0, g01 = 0, g11 = 0;
  for (int k = 1; k < t; ++k) {
    const double cur = y(k), prev = y(k - 1);
    for (int i = 0; i < p; ++i) {
      const double xc = design(k, i), xp = design(k - 1, i);
      m00(i) += xc * cur;
      m01(i) += xc * prev;
      m10(i) += xp * cur;
      m11(i) += xp * prev;
      for (int j = 0; j < p; ++j) {
        s00(i, j) += xc * design(k, j);
        s01(i, j) += xc * design(k - 1, j);
        s11(i, j) += xp * design(k - 1, j);
      }
    }
    g00 += cur * cur;
    g01 += cur * prev;
    g11 += prev * prev;
  }
  BayesGlmChain out{Eigen::MatrixXd(steps, p), Eigen::VectorXd(steps), Eigen::VectorXd(steps)};
  double rho = rho0;
  Eigen::VectorXd beta(p), z(p);
  for (int step = 0; step < steps; ++step) {
    const random::StreamPoint at{random::seed_key(seed), voxel, chain, static_cast<uint32_t>(step)};
    // X~'X~, X~'y~, y~'y~ for the current rho.
    const Eigen::MatrixXd xx = s00 - rho * (s01 + s01.transpose()) + rho * rho * s11;
    const Eigen::VectorXd xy = m00 - rho * (m01 + m10) + rho * rho * m11;
    const double yy = g00 - 2.0 * rho * g01 + rho * rho * g11;
    const Eigen::MatrixXd precision = xx + prior.beta_precision * Eigen::MatrixXd::Identity(p, p);
    const Eigen::LLT<Eigen::MatrixXd> llt(precision);
    const Eigen::VectorXd mean = llt.solve(xy);
    // (1) sigma^2 | rho.
    const double shape = prior.a0 + 0.5 * n, scale = prior.b0 + 0.5 * std::max(0.0, yy - mean.dot(xy));
    const double sigma2 = scale / random::gamma_draw(at, 0, shape);
    // (2) beta | sigma^2, rho: mean + sigma L^-T z, with precision = L L'.
    for (int k = 0; k < p; k += 2) {
      const auto pair = random::normal_pair(at, static_cast<uint32_t>(1 + k / 2));
      z(k) = pair[0];
      if (k + 1 < p) z(k + 1) = pair[1];
    }
    beta = mean + std::sqrt(sigma2) * llt.matrixU().solve(z);
    // (3) rho | beta, sigma^2.
    if (!fix_rho) {
      // The residuals' lag sums, in time order.
      double s01e = 0, s11e = 0, previous = y(0) - design.row(0).dot(beta);
      for (int k = 1; k < t; ++k) {
        double e = y(k);
        for (int i = 0; i < p; ++i) e -= design(k, i) * beta(i);
        s01e += e * previous;
        s11e += previous * previous;
        previous = e;
      }
      const double q = prior.rho_precision + s11e / sigma2;
      const double proposal = s01e / (sigma2 * q) + random::normal_pair(at, kBayesRhoSlot)[0] / std::sqrt(q);
      if (std::abs(proposal) < 1.0) rho = proposal;
    }
    out.beta.row(step) = beta.transpose();
    out.sigma2(step) = sigma2;
    out.rho(step) = rho;
  }
  return out;
}

}  // namespace rtf::reference
