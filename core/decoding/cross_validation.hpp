// Cross-validated decoding (docs/algorithms/decoding.md): the folds as scikit-learn makes them (LeaveOneGroupOut over
// the runs or over the blocks, KFold without shuffling), every fold's model fitted on its training samples and scored
// on its test samples (accuracy, balanced accuracy: the mean recall over the classes the test set holds, as
// sklearn.metrics.balanced_accuracy_score), the decision values and predictions of every tested sample and the
// confusion matrix summed over the folds.
#pragma once

#include <Eigen/Core>
#include <span>
#include <string>
#include <vector>

#include "core/decoding/decoding_samples.hpp"
#include "core/decoding/linear_model.hpp"
#include "core/decoding/sample_space.hpp"

namespace rtf {

enum class CvScheme { kLeaveOneRunOut, kKFold, kBlocks };

// "leave-one-run-out", "k-fold", "blocks". Throws std::invalid_argument naming the value.
CvScheme cv_scheme(const std::string& name);

// The test samples of each fold, in order: leave-one-run-out and blocks, one fold per run (block) in ascending id;
// k-fold: `k` contiguous folds, the first n % k one sample longer. Throws std::invalid_argument for one run (block)
// only, or k outside 2..n.
std::vector<std::vector<int>> cv_folds(CvScheme scheme, const DecodingSamples& samples, int k);

// Each fold's training and test features, computed once (the eigendecompositions of the dual folds) and reused by
// every fit of a permutation test.
struct PreparedFolds {
  std::vector<std::vector<int>> test, train;
  std::vector<SampleSpace::Fold> features;
};
PreparedFolds prepare_folds(const SampleSpace& space, std::vector<std::vector<int>> test_sets);

struct FoldScore {
  double accuracy = 0.0, balanced_accuracy = 0.0;
  int iterations = 0;
  bool converged = true;
};

struct CvResult {
  std::vector<FoldScore> folds;
  Eigen::MatrixXd decisions;   // n x M: each sample's decision values from the fold that tested it (NaN: untested)
  std::vector<int> predicted;  // n: -1 when untested
  std::vector<int> fold_of;    // n: the fold that tested the sample, -1 for none
  Eigen::MatrixXi confusion;   // K x K: rows the true class, columns the predicted one
  double mean_accuracy = 0.0, mean_balanced_accuracy = 0.0;
};

// Throws std::invalid_argument naming the fold and class when a fold's training samples lack a class.
CvResult cross_validate(DecoderModel model, const SolverOptions& options, const PreparedFolds& folds,
                        std::span<const int> labels, int classes);

// The mean accuracy over the folds only (a permutation test's statistic).
double cross_validated_accuracy(DecoderModel model, const SolverOptions& options, const PreparedFolds& folds,
                                std::span<const int> labels, int classes);

}  // namespace rtf
