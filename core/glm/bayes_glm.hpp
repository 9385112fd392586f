// The Bayesian first-level GLM's Gibbs chains (AR(L) noise, L = 1 .. 4) on the device (kernels/bayes_glm.cl; model and
// step: docs/algorithms/bayes_glm.md), in double, one work-item per (voxel, chain), drawing from the same Philox
// streams as the double reference (core/reference/bayes_glm_reference.hpp), which it equals draw for draw up to
// rounding.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "core/device/device.hpp"
#include "core/glm/bayes_glm_model.hpp"

namespace rtf {

struct BayesGlmChains {
  int voxels = 0, chains = 0, steps = 0, regressors = 0, order = 1;
  std::vector<double> values;  // [voxel][chain][step][P + 1 + L]: beta, sigma^2, rho_1 .. rho_L after each step
  double beta(int voxel, int chain, int step, int k) const { return at(voxel, chain, step)[k]; }
  double sigma2(int voxel, int chain, int step) const { return at(voxel, chain, step)[regressors]; }
  double rho(int voxel, int chain, int step, int k = 0) const { return at(voxel, chain, step)[regressors + 1 + k]; }

 private:
  const double* at(int voxel, int chain, int step) const {
    return values.data() + ((static_cast<size_t>(voxel) * static_cast<size_t>(chains) + static_cast<size_t>(chain)) *
                                static_cast<size_t>(steps) +
                            static_cast<size_t>(step)) *
                               static_cast<size_t>(regressors + 1 + order);
  }
};

// Posterior summaries of every voxel from `chains` chains of `steps` Gibbs steps, the first `burn_in` dropped,
// without storing the chains (kernels/bayes_glm.cl bayes_glm_summary). Monitored: each contrast c'beta, sigma^2,
// rho_1 .. rho_L.
struct BayesGlmSummary {
  int voxels = 0, contrasts = 0, order = 1;
  // [quantity][voxel], quantity = contrast 0 .. NC-1, then sigma^2 (NC), then rho_1 .. rho_L (NC + 1 .. NC + L):
  std::vector<std::vector<double>> mean, sd;
  std::vector<std::vector<double>> ppm;    // [contrast][voxel]: P(c'beta > 0 | data), the fraction of kept draws
  std::vector<std::vector<double>> r_hat;  // [quantity][voxel]: split-R-hat over 2 x chains half-chains
  std::vector<std::vector<double>> ess;    // [quantity][voxel]: batch-means effective sample size, all chains
};

constexpr int kBayesBatches = 16;  // batches of the batch-means ESS (kernels/bayes_glm.cl NB)

// The summary statistics of one voxel from the kernel's per-chain sums (exposed for tests): `sums` [chain][quantity]
// [4 + kBayesBatches] with contrasts + 1 + out.order quantities, `above` [chain][contrast], K kept draws per chain.
void combine_chain_sums(const double* sums, const double* above, int chains, int contrasts, int kept,
                        BayesGlmSummary& out, int voxel);

// AR(`order`) noise, order 1 .. kBayesMaxArOrder; rho starts at (rho0, 0, .., 0). The chains of voxel v (0 ..
// voxels - 1 of `series`) draw from the streams of voxel first_voxel + v: a block of a larger set, run with its first
// voxel's index there, gives the summaries the whole run gives it, bit for bit.
BayesGlmSummary bayes_glm_summary(Device& device, const std::vector<float>& series, int voxels,
                                  const Eigen::MatrixXd& design, const Eigen::MatrixXd& contrasts,
                                  const BayesGlmPrior& prior, uint64_t seed, int chains, int steps, int burn_in,
                                  double rho0 = 0.0, int order = 1, uint32_t first_voxel = 0);

// Every step of every chain (for tests and diagnostics on small sets). `series`: [voxels][T]. Throws
// std::invalid_argument for a design that does not have T rows, fewer than P + L + 1 volumes, more than
// kBayesMaxRegressors regressors, or an order outside 1 .. kBayesMaxArOrder. `first_voxel`: as bayes_glm_summary.
BayesGlmChains bayes_glm_chains(Device& device, const std::vector<float>& series, int voxels,
                                const Eigen::MatrixXd& design, const BayesGlmPrior& prior, uint64_t seed, int chains,
                                int steps, double rho0 = 0.0, int order = 1, uint32_t first_voxel = 0);

}  // namespace rtf
