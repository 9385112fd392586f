// `rtfmri glm BOLD --events FILE --contrast NAME=EXPR --out PREFIX`, the whole command (cli/cmd_glm.cpp declares the
// options): the first-level GLM of a 4D NIfTI with the live GLM's kernels: SPM's design from a BIDS events.tsv,
// optional confounds and AR(1) prewhitening; writes the design, betas, residual variance, mask and per contrast the
// estimate and t (or F) map (docs/algorithms/glm.md). With noise arP, the AR(P) GLM (Cochrane-Orcutt, smoothed AR
// maps), and with permutations the first-level permutation test of Eklund et al. 2012 (docs/algorithms/glm_ar.md). With
// bayes the Bayesian GLM's Gibbs sampler spread over devices and MPI ranks (core/glm/bayes_glm_spread.hpp,
// docs/algorithms/bayes_glm.md). core/first_level/ sits above core/glm, core/design and core/permutation, which it
// joins into the command.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/glm/bayes_glm_spread.hpp"
#include "core/scale/workers_opening.hpp"

namespace rtf {

struct GlmOptions {
  std::string bold, events, out, mask, confounds, derivatives = "none";
  std::vector<std::string> contrasts, confound_columns;
  double tr_s = 0.0, highpass_s = 128.0, ar1 = 0.0, threshold = 3.1;
  int poly = -1;
  int microtime_onset = 8;
  bool no_mask = false;
  // AR(P) noise and the permutation test (docs/algorithms/glm_ar.md).
  std::string noise = "ols", permute_mode = "permute";
  int ar_iterations = 3, permutations = 0, connectivity = 26, batch = 16;
  double ar_fwhm = 6.0, fwhm = 0.0, cluster_threshold = 3.1, tfce_e = 0.5, tfce_h = 2.0;
  std::vector<std::string> inference{"voxel"};
  uint64_t seed = 0;
  // The Bayesian GLM (docs/algorithms/bayes_glm.md).
  bool bayes = false, noise_given = false;  // noise_given: noise named on the command line (bayes: default ar1)
  BayesGlmOptions bayes_options;            // its seed and order come from seed and noise
  int ar_order() const { return noise == "ols" ? 0 : noise.back() - '0'; }  // P of arP; 0 for ols
};

// Throws std::invalid_argument for options that do not go together and for inputs that do not fit (a 3D series, a
// TR missing, confounds of another length, a mask on another grid). Prints the summary lines.
void run_glm(const GlmOptions& options, const DeviceChoice& devices);

}  // namespace rtf
