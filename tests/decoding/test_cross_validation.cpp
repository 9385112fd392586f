// Cross-validation and the permutation test of decoding, on the host: folds laid out as scikit-learn's KFold and
// LeaveOneGroupOut; the dual (Gram matrix) and primal sample spaces give the same decision values and predictions for
// every model; a fold without a class refused; on data with no pattern the accuracy sits at chance and the
// permutation p-values are uniform over many null sets (their rates at 0.1, 0.25, 0.5 within 4 binomial SDs); a
// planted pattern is found with the smallest p-value.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/decoding/cross_validation.hpp"
#include "core/decoding/decoding_permutation.hpp"

namespace rtf {
namespace {

DecodingSamples samples_of(const std::vector<int>& runs, const std::vector<int>& labels, int classes) {
  DecodingSamples s;
  for (int c = 0; c < classes; ++c) s.classes.push_back(std::string(1, static_cast<char>('a' + c)));
  s.run = runs;
  s.label = labels;
  s.volume.resize(runs.size());
  s.block.resize(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) s.block[i] = static_cast<int>(i) / 4;  // blocks of 4
  return s;
}

TEST(CvFolds, FollowKFoldAndLeaveOneGroupOut) {
  const DecodingSamples s = samples_of({1, 1, 1, 0, 0, 0, 0, 2, 2, 2}, {0, 1, 0, 1, 0, 1, 0, 1, 0, 1}, 2);
  const auto k = cv_folds(CvScheme::kKFold, s, 3);
  EXPECT_EQ(k, (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6}, {7, 8, 9}}));
  const auto runs = cv_folds(CvScheme::kLeaveOneRunOut, s, 0);
  EXPECT_EQ(runs, (std::vector<std::vector<int>>{{3, 4, 5, 6}, {0, 1, 2}, {7, 8, 9}}));  // groups in ascending order
  const auto blocks = cv_folds(CvScheme::kBlocks, s, 0);
  EXPECT_EQ(blocks, (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  EXPECT_THROW(cv_folds(CvScheme::kKFold, s, 1), std::invalid_argument);
  EXPECT_THROW(cv_folds(CvScheme::kKFold, s, 11), std::invalid_argument);
  EXPECT_THROW(cv_folds(CvScheme::kLeaveOneRunOut, samples_of({0, 0}, {0, 1}, 2), 0), std::invalid_argument);
  EXPECT_THROW(cv_scheme("loso"), std::invalid_argument);
}

// n samples from `runs` runs, p features of noise plus `signal` times a fixed pattern signed by the class.
struct Data {
  Eigen::MatrixXd x;
  std::vector<int> labels, runs;
};

Data noisy_data(int n, int p, int classes, int runs, double signal, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  Data d;
  d.x.resize(n, p);
  Eigen::MatrixXd patterns(classes, p);
  for (Eigen::Index i = 0; i < patterns.size(); ++i) patterns.data()[i] = normal(rng);
  for (int i = 0; i < n; ++i) {
    d.runs.push_back(i * runs / n);
    d.labels.push_back((i / 3) % classes);  // blocks of 3 samples
    for (int f = 0; f < p; ++f) d.x(i, f) = normal(rng) + signal * patterns(d.labels.back(), f);
  }
  return d;
}

// The dual space's coordinates reproduce the primal decision values up to the eigendecomposition's rounding (~1e-12
// relative) amplified by the solvers' conditioning: 1e-7 relative to the largest decision value; predictions equal.
TEST(CrossValidation, DualAndPrimalSpacesAgreeForEveryModel) {
  for (const int classes : {2, 3}) {
    const Data d = noisy_data(48, 131, classes, 3, 0.3, 5 + static_cast<uint64_t>(classes));
    const DecodingSamples s = samples_of(d.runs, d.labels, classes);
    const auto folds = cv_folds(CvScheme::kLeaveOneRunOut, s, 0);
    const PreparedFolds primal = prepare_folds(SampleSpace::primal(d.x), folds);
    const PreparedFolds dual = prepare_folds(SampleSpace::dual(d.x * d.x.transpose()), folds);
    for (const DecoderModel m :
         {DecoderModel::kLogistic, DecoderModel::kSvmSquaredHinge, DecoderModel::kSvmHinge, DecoderModel::kRidge}) {
      SolverOptions o;
      o.c = 0.05;
      o.alpha = 10.0;
      const CvResult a = cross_validate(m, o, primal, d.labels, classes);
      const CvResult b = cross_validate(m, o, dual, d.labels, classes);
      const double scale = a.decisions.cwiseAbs().maxCoeff();
      EXPECT_LE((a.decisions - b.decisions).cwiseAbs().maxCoeff(), 1e-7 * scale)
          << decoder_model_name(m) << ", " << classes << " classes";
      EXPECT_EQ(a.predicted, b.predicted) << decoder_model_name(m);
      EXPECT_EQ(a.confusion, b.confusion);
      EXPECT_EQ(a.confusion.sum(), 48);
      for (const FoldScore& f : a.folds) EXPECT_TRUE(f.converged);
    }
  }
}

TEST(CrossValidation, ScoresAndRefusesAFoldWithoutAClass) {
  const Data d = noisy_data(30, 5, 2, 2, 3.0, 9);
  const DecodingSamples s = samples_of(d.runs, d.labels, 2);
  const PreparedFolds folds = prepare_folds(SampleSpace::primal(d.x), cv_folds(CvScheme::kKFold, s, 5));
  const CvResult r = cross_validate(DecoderModel::kRidge, {}, folds, d.labels, 2);
  ASSERT_EQ(r.folds.size(), 5u);
  double mean = 0.0;
  for (size_t f = 0; f < 5; ++f) {
    int correct = 0;
    for (const int i : folds.test[f])
      correct += r.predicted[static_cast<size_t>(i)] == d.labels[static_cast<size_t>(i)];
    EXPECT_DOUBLE_EQ(r.folds[f].accuracy, correct / 6.0);
    mean += r.folds[f].accuracy / 5.0;
  }
  EXPECT_DOUBLE_EQ(r.mean_accuracy, mean);
  EXPECT_GT(r.mean_accuracy, 0.9);  // signal 3 SDs per feature
  // Labels 0 only in the first 6 samples: the fold testing them trains on class 1 alone.
  std::vector<int> skewed(30, 1);
  for (int i = 0; i < 6; ++i) skewed[static_cast<size_t>(i)] = 0;
  EXPECT_THROW(cross_validate(DecoderModel::kRidge, {}, folds, skewed, 2), std::invalid_argument);
}

// 300 null sets of 60 samples (2 runs, 2 classes) x 8 features, ridge, leave-one-run-out, 100 rearrangements each.
TEST(DecodingPermutations, PValuesAreUniformOnNullData) {
  constexpr int kSets = 300, kPermutations = 100;
  std::vector<double> p_values;
  double accuracy = 0.0;
  for (int set = 0; set < kSets; ++set) {
    const Data d = noisy_data(60, 8, 2, 2, 0.0, 1000 + static_cast<uint64_t>(set));
    const DecodingSamples s = samples_of(d.runs, d.labels, 2);
    const PreparedFolds folds = prepare_folds(SampleSpace::primal(d.x), cv_folds(CvScheme::kLeaveOneRunOut, s, 0));
    const DecodingPermutations t = permutation_test(DecoderModel::kRidge, {}, folds, d.labels, 2, d.runs, kPermutations,
                                                    static_cast<uint64_t>(set));
    ASSERT_EQ(t.null.size(), static_cast<size_t>(kPermutations));
    EXPECT_DOUBLE_EQ(t.null.front(), cross_validated_accuracy(DecoderModel::kRidge, {}, folds, d.labels, 2));
    p_values.push_back(t.p_value);
    accuracy += t.null.front() / kSets;
  }
  // Chance: 0.5, the mean of 300 accuracies of 60 samples has an SD of ~0.5 / sqrt(300 * 60) = 0.004.
  EXPECT_NEAR(accuracy, 0.5, 0.02);
  for (const double alpha : {0.1, 0.25, 0.5}) {
    const double rate =
        static_cast<double>(std::count_if(p_values.begin(), p_values.end(), [&](double p) { return p <= alpha; })) /
        kSets;
    const double sd = std::sqrt(alpha * (1 - alpha) / kSets);
    EXPECT_NEAR(rate, alpha, 4 * sd) << "P(p <= " << alpha << ")";
  }
}

TEST(DecodingPermutations, FindAPlantedPatternAndRepeatWithTheSeed) {
  const Data d = noisy_data(60, 20, 3, 3, 0.8, 77);
  const DecodingSamples s = samples_of(d.runs, d.labels, 3);
  const PreparedFolds folds = prepare_folds(SampleSpace::primal(d.x), cv_folds(CvScheme::kLeaveOneRunOut, s, 0));
  const DecodingPermutations a = permutation_test(DecoderModel::kLogistic, {}, folds, d.labels, 3, d.runs, 50, 4);
  const DecodingPermutations b = permutation_test(DecoderModel::kLogistic, {}, folds, d.labels, 3, d.runs, 50, 4);
  EXPECT_GT(a.null.front(), 0.8);
  EXPECT_DOUBLE_EQ(a.p_value, 1.0 / 50);
  EXPECT_EQ(a.null, b.null);
  EXPECT_THROW(permutation_test(DecoderModel::kRidge, {}, folds, d.labels, 3, d.runs, 1, 4), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
