// The Bayesian first-level GLM (Gibbs sampler, AR(L) noise; core/glm/bayes_glm.hpp, docs/algorithms/bayes_glm.md) of
// a whole series, spread over devices and MPI ranks (`rtfmri glm --bayes`): the mask voxels are cut into blocks, one
// chunk of the scale-out job each (core/scale/scale_out.hpp); each voxel's chains draw from streams keyed by its index
// in the mask, so any split gives the same summaries, bit for bit (docs/scale.md). Rank 0 writes per t contrast the
// posterior mean, SD and PPM P(c'beta > 0) as NIfTI, sigma^2's and rho's posterior means, and split-R-hat / ESS in
// PREFIX_glm.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/design/design_matrix.hpp"
#include "core/glm/glm_model.hpp"
#include "core/image/image.hpp"
#include "core/io/output_set.hpp"
#include "core/scale/scale_out.hpp"

namespace rtf {

struct BayesGlmOptions {
  int draws = 10000, burn_in = 1000, chains = 2;
  int order = 1;  // AR(L) noise, L = 1 .. 4
  uint64_t seed = 0;
  int chunk_voxels = 0;  // voxels per block (0: 4 blocks per device, at least 256); changes no result
};

// `contrast_files`: each contrast's name as it appears in file names. Writes PREFIX_contrast-NAME_stat-{postmean,
// postsd,ppm}.nii.gz, PREFIX_sigma2_postmean.nii.gz, PREFIX_ar_postmean.nii.gz (3D for AR(1), else 4D with rho_1 ..
// rho_L as volumes) and PREFIX_glm.json (per AR coefficient its split-R-hat and ESS) into `outputs`, with what the
// caller added to it, and commits it; only on rank 0 (the others compute their blocks and return). Finished blocks are
// kept in PREFIX_chunks/ until the outputs are committed: the same command run again after a stop or a failed write
// reuses them. Throws std::invalid_argument for F contrasts, more than 16 design columns, an empty mask or too few
// draws.
void run_bayes_glm(const BayesGlmOptions& options, ScaleOut& scale, const Image& bold, const DesignMatrix& design,
                   const std::vector<GlmContrast>& contrasts, const std::vector<std::string>& contrast_files,
                   const std::vector<uint8_t>& mask, const std::string& out, io::OutputSet& outputs);

}  // namespace rtf
