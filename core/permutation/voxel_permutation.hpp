// Voxel-wise permutation test of one t contrast on the device (kernels/permutation_t.cl): the observed t per voxel,
// how many rearrangements reach it (uncorrected p) and the largest t of each rearrangement over the mask (the null
// distribution of the maximum, for family-wise error corrected p), as FSL randomise's -x computes them.
// docs/algorithms/randomise.md.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/permutation/permutation_set.hpp"
#include "core/permutation/t_contrast_model.hpp"

namespace rtf {

struct VoxelPermutationResult {
  std::vector<float> t;          // per voxel: the observed statistic
  std::vector<uint32_t> exceed;  // per voxel: rearrangements (the identity included) with t* >= t
  std::vector<float> max_null;   // per rearrangement (identity first): the largest t* over the voxels
  // p values as randomise defines them: the fraction of the rearrangements (the identity included) at or above.
  std::vector<double> uncorrected_p() const;
  std::vector<double> corrected_p() const;  // against max_null
};

// Called after each launch with the rearrangements done so far (of set.count); may throw to abandon the run.
using PermutationProgress = std::function<void(int done, int total)>;
// Given, each launch also writes its rearrangements' t maps (`count` x V, rearrangements first .. first + count - 1)
// and hands them over (cluster inference: core/permutation/clusters.hpp); they are overwritten by the next launch.
using PermutationMaps = std::function<void(const DeviceBuffer<float>& maps, int first, int count)>;

// The nuisance residuals e = (I - H_Z) y of `data` (N subjects x V voxels, voxel fastest per subject), in place.
void remove_nuisance(const TContrastModel& model, std::vector<float>& data, size_t voxels);

// `residuals`: N x V (voxel fastest), the output of remove_nuisance. Throws std::invalid_argument when the sizes
// disagree with the model and the set.
VoxelPermutationResult voxel_permutation_test(Device& device, const TContrastModel& model, const PermutationSet& set,
                                              const std::vector<float>& residuals, size_t voxels,
                                              const PermutationProgress& progress = {},
                                              const PermutationMaps& maps = {}, int max_block = 128);

}  // namespace rtf
