// Voxel-wise permutation test of one t contrast on the device (kernels/permutation_t.cl): the observed t per voxel,
// how many rearrangements reach it (uncorrected p) and the largest t of each rearrangement over the mask (the null
// distribution of the maximum, for family-wise error corrected p), as FSL randomise's -x computes them. The work splits
// into blocks of rearrangements (VoxelPermutationBlocks) that run on any device in any order: a block's counts are
// integers and its maxima exact, so blocks summed in order give the whole set's result bit for bit (core/permutation/
// permutation_chunks.hpp spreads them over devices and ranks). docs/algorithms/randomise.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
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

// One block of rearrangements [first, first + count) of a set.
struct VoxelPermutationBlock {
  int first = 0;
  std::vector<uint32_t> exceed;  // per voxel: the block's rearrangements with t* >= the observed t
  std::vector<float> max_null;   // per rearrangement of the block: the largest t* over the voxels
};

// One device's share of a permutation test: the residuals are uploaded once; then blocks of the set's rearrangements
// are counted against an observed statistic, which is either computed here (observe) or handed in (set_observed: all
// devices then count against the same one). A block's results depend only on its rearrangements, never on the launches
// around them. `model`, `set` and the device must outlive the object. Not for use from two threads at once.
class VoxelPermutationBlocks {
 public:
  // `residuals`: N x V (voxel fastest), the output of remove_nuisance; `max_block` (a multiple of 32): rearrangements
  // per launch at most (fewer where their vectors would not fit in constant memory). Throws std::invalid_argument
  // when the sizes disagree with the model and the set, or for a bad max_block.
  VoxelPermutationBlocks(Device& device, const TContrastModel& model, const PermutationSet& set,
                         const std::vector<float>& residuals, size_t voxels, int max_block = 128);
  ~VoxelPermutationBlocks();
  VoxelPermutationBlocks(const VoxelPermutationBlocks&) = delete;
  VoxelPermutationBlocks& operator=(const VoxelPermutationBlocks&) = delete;

  // The observed statistic per voxel (the identity alone, in the kernel's precision: double where the device has it),
  // which becomes the one the blocks count against.
  std::vector<double> observe();
  // Counts against `t` (V values, e.g. another device's observe()) from now on.
  void set_observed(const std::vector<double>& t);
  // Rearrangements [first, first + count) of the set, launch by launch; `maps`, given, receives each launch's t maps
  // (first = the launch's first rearrangement in the set), `progress` the rearrangements of the block done so far.
  // Throws std::invalid_argument for a range outside the set, std::logic_error before any observed statistic.
  VoxelPermutationBlock run(int first, int count, const PermutationMaps& maps = {},
                            const PermutationProgress& progress = {});
  // Rearrangements per launch (what a PermutationMaps callback gets at most).
  int launch_block() const;
  size_t voxels() const { return voxels_; }

  class Impl;

 private:
  size_t voxels_;
  std::unique_ptr<Impl> impl_;
};

// The whole set on one device: observe, then one block of every rearrangement. `residuals`: N x V (voxel fastest),
// the output of remove_nuisance. Throws std::invalid_argument when the sizes disagree with the model and the set.
VoxelPermutationResult voxel_permutation_test(Device& device, const TContrastModel& model, const PermutationSet& set,
                                              const std::vector<float>& residuals, size_t voxels,
                                              const PermutationProgress& progress = {},
                                              const PermutationMaps& maps = {}, int max_block = 128);

}  // namespace rtf
