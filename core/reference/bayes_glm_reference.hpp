// Double-precision reference Gibbs sampler for the Bayesian first-level GLM with AR(L) noise, L = 1 .. 4 (issue 17;
// BROCCOLI's model and priors as its kernel applies them, docs/algorithms/bayes_glm.md), drawing from the Philox
// streams of core/random/draws.hpp so that a device chain can be compared with it draw for draw.
//   y_t = x_t' beta + e_t,  e_t = sum_k rho_k e_(t-k) + eps_t,  eps_t ~ N(0, sigma^2), conditional on the first L
//   volumes (n = T - L whitened rows y~_t = y_t - sum_k rho_k y_(t-k), x~_t likewise).
//   Priors: beta | sigma^2 ~ N(0, sigma^2 / beta_precision I); sigma^2 ~ IG(a0, b0); rho ~ N(0, I / rho_precision)
//   restricted to the stationary region.
// Each step: (1) sigma^2 | rho from IG(a0 + n/2, b0 + (y~'y~ - m' P m)/2) with P = beta_precision I + X~'X~,
// m = P^-1 X~'y~ (beta integrated out); (2) beta | sigma^2, rho ~ N(m, sigma^2 P^-1); (3) rho | beta, sigma^2: the
// residuals e_t regress on (e_(t-1), ..., e_(t-L)), t = L .. T-1 (rows E, targets e): a draw of N(Q^-1 E'e / sigma^2,
// Q^-1), Q = rho_precision I + E'E / sigma^2 (for L = 1 the scalar N(s_01 / (sigma^2 q), 1 / q)); a non-stationary
// draw keeps the current rho (an independence Metropolis-Hastings step whose proposal is the unrestricted
// conditional: exact for the restricted prior).
// X~'X~ = sum_(a,b = 0..L) c_a c_b S_ab with c = (1, -rho_1, ..., -rho_L) and the lag sums S_ab = sum_t x_(t-a)
// x_(t-b)' (likewise X~'y~, y~'y~), formed once in time order. Stream slots within a step:
// core/glm/bayes_glm_model.hpp.
#pragma once

#include <Eigen/Core>
#include <cstdint>

#include "core/glm/bayes_glm_model.hpp"

namespace rtf::reference {

struct BayesGlmChain {
  Eigen::MatrixXd beta;    // steps x P
  Eigen::VectorXd sigma2;  // steps
  Eigen::MatrixXd rho;     // steps x L (the values after the step's update)
};

// Whether e_t = sum_k rho_k e_(t-k) + eps_t is stationary (every root of 1 - sum_k rho_k z^k outside the unit
// circle), by the Levinson-Durbin step-down recursion: every reflection coefficient |k_m| < 1. `order` 1 .. 4.
bool ar_is_stationary(const double* rho, int order);

// `steps` Gibbs steps of chain `chain` at `voxel` from rho = `rho0` (its size is the AR order L, 1 .. 4; burn-in is
// the caller's: it drops the first rows). With `fix_rho` rho stays at rho0 and the (sigma^2, beta) draws are
// independent draws of their exact normal-inverse-gamma posterior (the tests' analytic check). Throws
// std::invalid_argument for fewer than P + L + 1 volumes, more than kBayesMaxRegressors regressors or an order
// outside 1 .. 4.
BayesGlmChain bayes_glm_chain(const Eigen::VectorXd& y, const Eigen::MatrixXd& design, const BayesGlmPrior& prior,
                              uint64_t seed, uint32_t voxel, uint32_t chain, int steps, const Eigen::VectorXd& rho0,
                              bool fix_rho = false);

// AR(1): rho starts at `rho0`.
BayesGlmChain bayes_glm_chain(const Eigen::VectorXd& y, const Eigen::MatrixXd& design, const BayesGlmPrior& prior,
                              uint64_t seed, uint32_t voxel, uint32_t chain, int steps, double rho0 = 0.0,
                              bool fix_rho = false);

}  // namespace rtf::reference
