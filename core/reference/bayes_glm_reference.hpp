// Double-precision reference Gibbs sampler for the Bayesian first-level GLM with AR(1) noise (issue 17; BROCCOLI's
// model and priors as its kernel applies them, docs/algorithms/bayes_glm.md), drawing from the Philox streams of
// core/random/draws.hpp so that a device chain can be compared with it draw for draw.
//   y_t = x_t' beta + e_t,  e_t = rho e_(t-1) + eps_t,  eps_t ~ N(0, sigma^2), conditional on the first volume
//   (n = T - 1 whitened rows y~_t = y_t - rho y_(t-1), x~_t = x_t - rho x_(t-1)).
//   Priors: beta | sigma^2 ~ N(0, sigma^2 / beta_precision I); sigma^2 ~ IG(a0, b0); rho ~ N(0, 1 / rho_precision)
//   restricted to |rho| < 1.
// Each step: (1) sigma^2 | rho from IG(a0 + n/2, b0 + (y~'y~ - m' P m)/2) with P = beta_precision I + X~'X~,
// m = P^-1 X~'y~ (beta integrated out); (2) beta | sigma^2, rho ~ N(m, sigma^2 P^-1); (3) rho | beta, sigma^2 from
// N(s_01 / (sigma^2 q), 1 / q), q = rho_precision + s_11 / sigma^2, over the residuals' lag-1 sums s_01 = sum e_t
// e_(t-1), s_11 = sum e_(t-1)^2; a draw outside (-1, 1) keeps the current rho (an independence Metropolis-Hastings
// step whose proposal is the unrestricted conditional: exact for the restricted prior).
// Stream slots within a step: core/glm/bayes_glm_model.hpp.
#pragma once

#include <Eigen/Core>
#include <cstdint>

#include "core/glm/bayes_glm_model.hpp"

namespace rtf::reference {

struct BayesGlmChain {
  Eigen::MatrixXd beta;    // steps x P
  Eigen::VectorXd sigma2;  // steps
  Eigen::VectorXd rho;     // steps (the value after the step's update)
};

// `steps` Gibbs steps of chain `chain` at `voxel` from rho = `rho0` (burn-in is the caller's: it drops the first
// rows). With `fix_rho` rho stays at rho0 and the (sigma^2, beta) draws are independent draws of their exact
// normal-inverse-gamma posterior (the tests' analytic check). Throws std::invalid_argument for fewer than P + 2
// volumes or more than kBayesMaxRegressors regressors.
BayesGlmChain bayes_glm_chain(const Eigen::VectorXd& y, const Eigen::MatrixXd& design, const BayesGlmPrior& prior,
                              uint64_t seed, uint32_t voxel, uint32_t chain, int steps, double rho0 = 0.0,
                              bool fix_rho = false);

}  // namespace rtf::reference
