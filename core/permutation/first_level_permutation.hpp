// The first-level permutation test of Eklund, Andersson & Knutsson (2012) on the device (docs/algorithms/glm_ar.md):
// the nuisance-only residuals of each voxel whitened with its AR(P) model (estimated and smoothed as the AR GLM does),
// then per rearrangement of the time points (the same for every voxel) re-coloured (kernels/ar_resample.cl),
// smoothed, and analysed by the AR(P) GLM exactly as the observed data (core/glm/ar_glm.hpp). The null distributions
// of the maximum statistic, cluster extent and mass, and TFCE give FWE-corrected p maps.
#pragma once

#include <cstdint>
#include <vector>

#include "core/device/device.hpp"
#include "core/glm/ar_glm.hpp"
#include "core/image/image.hpp"
#include "core/permutation/permutation_set.hpp"
#include "core/permutation/voxel_permutation.hpp"

namespace rtf {

struct FirstLevelPermutationOptions {
  ArGlmOptions ar;
  double fwhm_mm = 0.0;  // smoothing of the observed data and of every surrogate (inside the mask); 0: none
  PermutationKind kind = PermutationKind::kPermute;
  int permutations = 1000;  // rearrangements, the identity (the observed data) included
  uint64_t seed = 0;
  bool cluster_extent = false, cluster_mass = false, tfce = false;  // t contrasts only
  double cluster_threshold = 3.1;                                   // cluster-forming t
  int connectivity = 26;
  double tfce_E = 0.5, tfce_H = 2.0;
  int max_batch = 16;  // surrogates per launch
};

// The whitened null data: nuisance columns (no contrast weighs them) removed by OLS from the unsmoothed series, AR(P)
// by Yule-Walker per voxel (kernels/ar_null.cl), the coefficient maps smoothed (options.ar.ar_fwhm_mm, inside the
// mask), and the truncated whitening w_t = r_t - sum_{k<=min(t,P)} rho_k r_{t-k}. Full grid, 0 outside the mask.
struct ArNullData {
  std::vector<float> whitened;  // [n][grid]
  std::vector<float> rho;       // [P][grid]
  std::vector<int> nuisance;    // the design's nuisance columns
};
// On the device: `series` holds the n volumes of `grid` (float [n][grid]); the buffers come back filled.
struct ArNullOnDevice {
  DeviceBuffer<float> whitened;  // [n][grid]
  DeviceBuffer<float> rho;       // [P][grid]
  std::vector<int> nuisance;
};
ArNullOnDevice prepare_ar_null(Device& device, const DeviceBuffer<float>& series, const ImageHeader& grid,
                               const Eigen::MatrixXd& design, const std::vector<GlmContrast>& contrasts,
                               const std::vector<uint8_t>& mask, const ArGlmOptions& options);
// The same from and to the host (tests).
ArNullData prepare_ar_null(Device& device, const Image& bold, const Eigen::MatrixXd& design,
                           const std::vector<GlmContrast>& contrasts, const std::vector<uint8_t>& mask,
                           const ArGlmOptions& options);

struct FirstLevelContrastResult {
  bool is_f = false;
  std::vector<float> observed;    // per mask voxel: the observed t (or F)
  std::vector<float> max_null;    // per rearrangement, the observed first: the largest statistic over the mask
  std::vector<double> vox_corrp;  // per mask voxel: 1 - FWE p
  std::vector<int64_t> max_extent;
  std::vector<double> max_mass;
  std::vector<float> max_tfce;
  std::vector<double> clustere_corrp, clusterm_corrp, tfce_corrp;  // as requested (t contrasts)
  std::vector<float> tfce;                                         // the observed TFCE per mask voxel
  int64_t clusters = 0;                                            // observed clusters above the threshold
  float dh = 0.0f;                                                 // TFCE step: max(observed maximum, 1) / 100
};

struct FirstLevelPermutationResult {
  int count = 0;                // rearrangements, the identity included
  bool exhaustive = false;      // all distinct ones (tiny series only)
  std::vector<int32_t> voxels;  // full-grid index of each mask voxel
  std::vector<FirstLevelContrastResult> contrasts;
};

// `bold`: the unsmoothed series; `design`: one row per volume. Throws std::invalid_argument as ArGlm and
// make_ar_glm_model do, and for fewer than 2 permutations.
FirstLevelPermutationResult first_level_permutation_test(Device& device, const Image& bold,
                                                         const Eigen::MatrixXd& design,
                                                         const std::vector<GlmContrast>& contrasts,
                                                         const std::vector<uint8_t>& mask,
                                                         const FirstLevelPermutationOptions& options,
                                                         const PermutationProgress& progress = {});

}  // namespace rtf
