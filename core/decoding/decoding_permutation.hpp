// The permutation test of a cross-validated accuracy (docs/algorithms/decoding.md; Ojala & Garriga 2010, as
// sklearn.model_selection.permutation_test_score with groups): the labels rearranged within each run (the runs are the
// exchangeability blocks: a run's class counts never change), the whole cross-validation repeated for each
// rearrangement with the folds' features computed once, FSL's convention for the count: `permutations` rearrangements
// of which the first is the identity, p = #{null accuracy >= observed} / permutations (1/permutations at best). The
// rearrangements come from core/permutation/permutation_set.hpp (seeded, the same on every machine); the fits are
// spread over the host's threads (each is small: the Gram matrix they share was computed once on the device).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/decoding/cross_validation.hpp"

namespace rtf {

struct DecodingPermutations {
  std::vector<double> null;  // the mean accuracy of every rearrangement, the identity (the observed) first
  double p_value = 1.0;
  bool exhaustive = false;  // every distinct rearrangement was used
};

// `runs`: each sample's run. `progress(done, total)` is called from the calling thread between batches. Throws
// std::invalid_argument for fewer than 2 permutations or a rearrangement whose training set lacks a class.
DecodingPermutations permutation_test(DecoderModel model, const SolverOptions& options, const PreparedFolds& folds,
                                      std::span<const int> labels, int classes, const std::vector<int>& runs,
                                      int permutations, uint64_t seed,
                                      const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace rtf
