// The Bayesian first-level GLM's priors and stream slots, shared by the device sampler (core/glm/bayes_glm.hpp) and the
// double reference (core/reference/bayes_glm_reference.hpp); the model: docs/algorithms/bayes_glm.md.
#pragma once

#include <cstdint>

namespace rtf {

struct BayesGlmPrior {
  double a0 = 0.01, b0 = 0.01;   // IG prior of sigma^2
  double beta_precision = 1e-6;  // of beta / sigma (a vague prior; BROCCOLI's host value: see the doc)
  double rho_precision = 0.09;   // of rho (BROCCOLI's kernel: c^2 with c = 0.3)
};

// Philox slots of one Gibbs step (docs/algorithms/random_streams.md): 0 the gamma of sigma^2, 1 .. ceil(P/2) the
// normal pairs of beta, kBayesRhoSlot the normal pair of (rho_1, rho_2) and kBayesRhoSlot + 1 that of (rho_3, rho_4)
// (AR(1) uses the first word of slot 15 only; kernels/bayes_glm.cl RHO_SLOT).
constexpr uint32_t kBayesRhoSlot = 15;
constexpr int kBayesMaxRegressors = 16;
constexpr int kBayesMaxArOrder = 4;  // AR(L) noise, L = 1 .. 4

}  // namespace rtf
