// The Bayesian first-level GLM's Gibbs chains on the device (kernels/bayes_glm.cl; model and step:
// docs/algorithms/bayes_glm.md), in double, one work-item per (voxel, chain), drawing from the same Philox streams as
// the double reference (core/reference/bayes_glm_reference.hpp), which it equals draw for draw up to rounding.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "core/device/device.hpp"
#include "core/glm/bayes_glm_model.hpp"

namespace rtf {

struct BayesGlmChains {
  int voxels = 0, chains = 0, steps = 0, regressors = 0;
  std::vector<double> values;  // [voxel][chain][step][P + 2]: beta, sigma^2, rho after each step
  double beta(int voxel, int chain, int step, int k) const { return at(voxel, chain, step)[k]; }
  double sigma2(int voxel, int chain, int step) const { return at(voxel, chain, step)[regressors]; }
  double rho(int voxel, int chain, int step) const { return at(voxel, chain, step)[regressors + 1]; }

 private:
  const double* at(int voxel, int chain, int step) const {
    return values.data() + ((static_cast<size_t>(voxel) * static_cast<size_t>(chains) + static_cast<size_t>(chain)) *
                                static_cast<size_t>(steps) +
                            static_cast<size_t>(step)) *
                               static_cast<size_t>(regressors + 2);
  }
};

// Every step of every chain (for tests and diagnostics on small sets). `series`: [voxels][T]. Throws
// std::invalid_argument for a design that does not have T rows, fewer than P + 2 volumes, or more than
// kBayesMaxRegressors regressors.
BayesGlmChains bayes_glm_chains(Device& device, const std::vector<float>& series, int voxels,
                                const Eigen::MatrixXd& design, const BayesGlmPrior& prior, uint64_t seed, int chains,
                                int steps, double rho0 = 0.0);

}  // namespace rtf
