// One randomise contrast's rearrangements as a spread chunk job (core/permutation/randomise.hpp): the observed
// statistic on rank 0's first device, sent to every rank, then the chunks of permutation_chunks.hpp over every device
// and rank, merged in order on rank 0.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/permutation/clusters.hpp"
#include "core/permutation/mask_neighbours.hpp"
#include "core/permutation/permutation_chunks.hpp"
#include "core/permutation/permutation_set.hpp"
#include "core/permutation/randomise_inputs.hpp"
#include "core/permutation/tfce.hpp"
#include "core/scale/scale_out.hpp"

namespace rtf {

// Rearrangements per launch when the t maps go to the cluster / TFCE statistics (their batch).
constexpr int kRandomiseMapBatch = 64;

// The cluster and TFCE statistics of each device slot, for every contrast, made on first use there (each slot is used
// by one thread at a time). The neighbour tables are made once, for every device.
class SlotStatistics {
 public:
  SlotStatistics(Workers& workers, MaskNeighbours clusters, MaskNeighbours tfce, double tfce_e, double tfce_h);
  ClusterStatistics& clusters(int slot);
  TfceStatistics& tfce(int slot);

 private:
  Workers& workers_;
  MaskNeighbours cluster_table_, tfce_table_;
  double tfce_e_, tfce_h_;
  std::vector<std::unique_ptr<ClusterStatistics>> clusters_;
  std::vector<std::unique_ptr<TfceStatistics>> tfces_;
};

// One contrast's results, kept until every contrast is done.
struct ContrastResult {
  std::vector<float> t;                 // the observed statistic
  float dh = 0.0f;                      // TFCE's step (0: none)
  bool permuted = false;                // whether permutations ran (-x, -c, -C, -T)
  PermutationChunkResult permutations;  // their counts and maxima
  double seconds = 0.0;
};

// Contrast k on every rank: its chunk files in chunk_root/SUFFIX. Rank 0's result holds the merged permutations.
ContrastResult permute_contrast(ScaleOut& scale, const RandomiseOptions& options, const RandomiseInputs& in,
                                const PermutationSet& set, SlotStatistics& statistics, size_t k,
                                const std::string& chunk_root);

}  // namespace rtf
