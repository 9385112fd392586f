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
  if (design.rows() != t || t < p + 2 || p < 1 || p > 30) {
    throw std::invalid_argument("bayes_glm_chain: needs 1..30 regressors and at least P + 2 volumes");
  }
  const int n = t - 1;
  // Lag sums: rows 1..T-1 (current) and 0..T-2 (previous).
  const Eigen::MatrixXd x0 = design.bottomRows(n), x1 = design.topRows(n);
  const Eigen::VectorXd y0 = y.tail(n), y1 = y.head(n);
  const Eigen::MatrixXd s00 = x0.transpose() * x0, s01 = x0.transpose() * x1, s11 = x1.transpose() * x1;
  const Eigen::VectorXd m00 = x0.transpose() * y0, m01 = x0.transpose() * y1, m10 = x1.transpose() * y0,
                        m11 = x1.transpose() * y1;
  const double g00 = y0.squaredNorm(), g01 = y0.dot(y1), g11 = y1.squaredNorm();
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
      const Eigen::VectorXd e = y - design * beta;
      const double s01e = e.tail(n).dot(e.head(n)), s11e = e.head(n).squaredNorm();
      const double q = prior.rho_precision + s11e / sigma2;
      const double proposal = s01e / (sigma2 * q) + random::normal_pair(at, kRhoSlot)[0] / std::sqrt(q);
      if (std::abs(proposal) < 1.0) rho = proposal;
    }
    out.beta.row(step) = beta.transpose();
    out.sigma2(step) = sigma2;
    out.rho(step) = rho;
  }
  return out;
}

}  // namespace rtf::reference
