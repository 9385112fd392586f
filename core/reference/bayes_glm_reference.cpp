// The reference Gibbs sampler: lag cross products once, then per step the whitened normal equations, a Cholesky
// factor, the normal-inverse-gamma draw and rho's conditional. The whitened sums are formed term by term in the order
// the device forms them (and, for L = 1, in the order of the AR(1) sampler before AR(L), whose chains it reproduces bit
// for bit).
#include "core/reference/bayes_glm_reference.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Dense>
#include <array>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/random/draws.hpp"

namespace rtf::reference {

bool ar_is_stationary(const double* rho, int order) {
  if (order < 1 || order > kBayesMaxArOrder) throw std::invalid_argument("ar_is_stationary: order 1 .. 4");
  // Step down from AR(m) to AR(m - 1): k_m = a_m, a_i <- (a_i + k_m a_(m-i)) / (1 - k_m^2).
  std::array<double, kBayesMaxArOrder> a{}, next{};
  for (int i = 0; i < order; ++i) a[static_cast<size_t>(i)] = rho[i];
  for (int m = order; m >= 1; --m) {
    const double k = a[static_cast<size_t>(m - 1)];
    if (!(std::abs(k) < 1.0)) return false;
    const double d = 1.0 - k * k;
    for (int i = 0; i < m - 1; ++i) {
      next[static_cast<size_t>(i)] = (a[static_cast<size_t>(i)] + k * a[static_cast<size_t>(m - 2 - i)]) / d;
    }
    for (int i = 0; i < m - 1; ++i) a[static_cast<size_t>(i)] = next[static_cast<size_t>(i)];
  }
  return true;
}

BayesGlmChain bayes_glm_chain(const Eigen::VectorXd& y, const Eigen::MatrixXd& design, const BayesGlmPrior& prior,
                              uint64_t seed, uint32_t voxel, uint32_t chain, int steps, double rho0, bool fix_rho) {
  return bayes_glm_chain(y, design, prior, seed, voxel, chain, steps, Eigen::VectorXd::Constant(1, rho0), fix_rho);
}

BayesGlmChain bayes_glm_chain(const Eigen::VectorXd& y, const Eigen::MatrixXd& design, const BayesGlmPrior& prior,
                              uint64_t seed, uint32_t voxel, uint32_t chain, int steps, const Eigen::VectorXd& rho0,
                              bool fix_rho) {
  const auto t = static_cast<int>(y.size());
  const auto p = static_cast<int>(design.cols());
  const auto order = static_cast<int>(rho0.size());
  if (order < 1 || order > kBayesMaxArOrder) throw std::invalid_argument("bayes_glm_chain: AR order 1 .. 4");
  if (design.rows() != t || t < p + order + 1 || p < 1 || p > kBayesMaxRegressors) {
    throw std::invalid_argument("bayes_glm_chain: needs 1..16 regressors and at least P + L + 1 volumes");
  }
  const int n = t - order, lags = order + 1;
  // Lag sums over t = L .. T-1, accumulated in time order (as the device does, so that both round alike):
  // S_ab = sum x_(t-a) x_(t-b)', m_ab = sum x_(t-a) y_(t-b), g_ab = sum y_(t-a) y_(t-b) (a <= b).
  const auto at = [lags](int a, int b) { return static_cast<size_t>(a * lags + b); };
  std::vector<Eigen::MatrixXd> s(static_cast<size_t>(lags * lags), Eigen::MatrixXd::Zero(p, p));
  std::vector<Eigen::VectorXd> m(static_cast<size_t>(lags * lags), Eigen::VectorXd::Zero(p));
  std::vector<double> g(static_cast<size_t>(lags * lags), 0.0);
  for (int k = order; k < t; ++k) {
    for (int a = 0; a < lags; ++a) {
      for (int b = 0; b < lags; ++b) {
        for (int i = 0; i < p; ++i) {
          const double xa = design(k - a, i);
          m[at(a, b)](i) += xa * y(k - b);
          for (int j = 0; j < p; ++j) s[at(a, b)](i, j) += xa * design(k - b, j);
        }
        if (a <= b) g[at(a, b)] += y(k - a) * y(k - b);
      }
    }
  }
  BayesGlmChain out{Eigen::MatrixXd(steps, p), Eigen::VectorXd(steps), Eigen::MatrixXd(steps, order)};
  Eigen::VectorXd rho = rho0;
  Eigen::VectorXd beta(p), z(p);
  Eigen::MatrixXd xx(p, p);
  Eigen::VectorXd xy(p);
  for (int step = 0; step < steps; ++step) {
    const random::StreamPoint point{random::seed_key(seed), voxel, chain, static_cast<uint32_t>(step)};
    // X~'X~, X~'y~, y~'y~ for the current rho: sum_(a,b) c_a c_b (lag sum)_ab, c = (1, -rho): the lag-0 term, the
    // terms linear in rho, then the quadratic ones (for L = 1: s00 - rho (s01 + s01') + rho^2 s11).
    for (int i = 0; i < p; ++i) {
      for (int j = 0; j < p; ++j) {
        double v = s[at(0, 0)](i, j);
        for (int a = 1; a <= order; ++a) v -= rho(a - 1) * (s[at(0, a)](i, j) + s[at(0, a)](j, i));
        for (int a = 1; a <= order; ++a) {
          v += rho(a - 1) * rho(a - 1) * s[at(a, a)](i, j);
          for (int b = a + 1; b <= order; ++b) v += rho(a - 1) * rho(b - 1) * (s[at(a, b)](i, j) + s[at(a, b)](j, i));
        }
        xx(i, j) = v;
      }
      double v = m[at(0, 0)](i);
      for (int a = 1; a <= order; ++a) v -= rho(a - 1) * (m[at(0, a)](i) + m[at(a, 0)](i));
      for (int a = 1; a <= order; ++a) {
        v += rho(a - 1) * rho(a - 1) * m[at(a, a)](i);
        for (int b = a + 1; b <= order; ++b) v += rho(a - 1) * rho(b - 1) * (m[at(a, b)](i) + m[at(b, a)](i));
      }
      xy(i) = v;
    }
    double yy = g[at(0, 0)];
    for (int a = 1; a <= order; ++a) yy -= 2.0 * rho(a - 1) * g[at(0, a)];
    for (int a = 1; a <= order; ++a) {
      yy += rho(a - 1) * rho(a - 1) * g[at(a, a)];
      for (int b = a + 1; b <= order; ++b) yy += 2.0 * rho(a - 1) * rho(b - 1) * g[at(a, b)];
    }
    const Eigen::MatrixXd precision = xx + prior.beta_precision * Eigen::MatrixXd::Identity(p, p);
    const Eigen::LLT<Eigen::MatrixXd> llt(precision);
    const Eigen::VectorXd mean = llt.solve(xy);
    // (1) sigma^2 | rho.
    const double shape = prior.a0 + 0.5 * n, scale = prior.b0 + 0.5 * std::max(0.0, yy - mean.dot(xy));
    const double sigma2 = scale / random::gamma_draw(point, 0, shape);
    // (2) beta | sigma^2, rho: mean + sigma L^-T z, with precision = L L'.
    for (int k = 0; k < p; k += 2) {
      const auto pair = random::normal_pair(point, static_cast<uint32_t>(1 + k / 2));
      z(k) = pair[0];
      if (k + 1 < p) z(k + 1) = pair[1];
    }
    beta = mean + std::sqrt(sigma2) * llt.matrixU().solve(z);
    // (3) rho | beta, sigma^2.
    if (!fix_rho) {
      // The residuals' lag sums E'E, E'e in time order; previous[k] = e_(t-1-k).
      std::array<double, kBayesMaxArOrder> previous{};
      for (int k = 0; k < order; ++k) {
        previous[static_cast<size_t>(order - 1 - k)] = y(k) - design.row(k).dot(beta);
      }
      Eigen::MatrixXd ee = Eigen::MatrixXd::Zero(order, order);
      Eigen::VectorXd e_next = Eigen::VectorXd::Zero(order);
      for (int k = order; k < t; ++k) {
        double e = y(k);
        for (int i = 0; i < p; ++i) e -= design(k, i) * beta(i);
        for (int a = 0; a < order; ++a) {
          e_next(a) += e * previous[static_cast<size_t>(a)];
          for (int b = a; b < order; ++b)
            ee(a, b) += previous[static_cast<size_t>(a)] * previous[static_cast<size_t>(b)];
        }
        for (int a = order - 1; a > 0; --a) previous[static_cast<size_t>(a)] = previous[static_cast<size_t>(a - 1)];
        previous[0] = e;
      }
      const auto draw = random::normal_pair(point, kBayesRhoSlot);
      if (order == 1) {
        const double q = prior.rho_precision + ee(0, 0) / sigma2;
        const double proposal = e_next(0) / (sigma2 * q) + draw[0] / std::sqrt(q);
        if (std::abs(proposal) < 1.0) rho(0) = proposal;
      } else {
        const auto more = random::normal_pair(point, kBayesRhoSlot + 1);
        const std::array<double, kBayesMaxArOrder> words{draw[0], draw[1], more[0], more[1]};
        Eigen::MatrixXd q(order, order);
        Eigen::VectorXd zr(order);
        for (int a = 0; a < order; ++a) {
          zr(a) = words[static_cast<size_t>(a)];
          for (int b = 0; b < order; ++b) {
            q(a, b) = (a == b ? prior.rho_precision : 0.0) + ee(std::min(a, b), std::max(a, b)) / sigma2;
          }
        }
        const Eigen::LLT<Eigen::MatrixXd> lq(q);
        const Eigen::VectorXd proposal = lq.solve(e_next / sigma2) + lq.matrixU().solve(zr);
        if (ar_is_stationary(proposal.data(), order)) rho = proposal;
      }
    }
    out.beta.row(step) = beta.transpose();
    out.sigma2(step) = sigma2;
    out.rho.row(step) = rho.transpose();
  }
  return out;
}

}  // namespace rtf::reference
