// cv_folds follows sklearn's LeaveOneGroupOut (np.unique order of the groups) and KFold(shuffle=False); the folds'
// eigendecompositions and fits are independent, spread over the host's threads, their results gathered in fold order
// (the same whatever the thread count).
#include "core/decoding/cross_validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <map>
#include <stdexcept>

#include "core/util/host_threads.hpp"

namespace rtf {

CvScheme cv_scheme(const std::string& name) {
  if (name == "leave-one-run-out") return CvScheme::kLeaveOneRunOut;
  if (name == "k-fold") return CvScheme::kKFold;
  if (name == "blocks") return CvScheme::kBlocks;
  throw std::invalid_argument(fmt::format("--cv {}: leave-one-run-out, k-fold or blocks", name));
}

namespace {

std::vector<std::vector<int>> leave_one_group_out(const std::vector<int>& groups, const char* what) {
  std::map<int, std::vector<int>> by_group;
  for (size_t i = 0; i < groups.size(); ++i) by_group[groups[i]].push_back(static_cast<int>(i));
  if (by_group.size() < 2) {
    throw std::invalid_argument(fmt::format("--cv: the samples come from one {}: leaving it out leaves nothing", what));
  }
  std::vector<std::vector<int>> folds;
  folds.reserve(by_group.size());
  for (auto& [group, members] : by_group) folds.push_back(std::move(members));
  return folds;
}

std::vector<int> complement(const std::vector<int>& test, size_t n) {
  std::vector<uint8_t> in_test(n, 0);
  for (const int i : test) in_test[static_cast<size_t>(i)] = 1;
  std::vector<int> train;
  for (size_t i = 0; i < n; ++i) {
    if (!in_test[i]) train.push_back(static_cast<int>(i));
  }
  return train;
}

std::vector<int> labels_of(std::span<const int> labels, const std::vector<int>& rows) {
  std::vector<int> out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) out[i] = labels[static_cast<size_t>(rows[i])];
  return out;
}

struct FoldOutcome {
  Eigen::MatrixXd decisions;
  std::vector<int> predicted;
  FoldScore score;
};

FoldOutcome run_fold(DecoderModel model, const SolverOptions& options, const PreparedFolds& folds, size_t f,
                     std::span<const int> labels, int classes) {
  const std::vector<int> train_labels = labels_of(labels, folds.train[f]);
  std::vector<uint8_t> seen(static_cast<size_t>(classes), 0);
  for (const int l : train_labels) seen[static_cast<size_t>(l)] = 1;
  for (int c = 0; c < classes; ++c) {
    if (!seen[static_cast<size_t>(c)]) {
      throw std::invalid_argument(
          fmt::format("fold {}: its training samples have no sample of class {} (choose another --cv)", f + 1, c));
    }
  }
  const LinearFit fit = fit_linear_model(model, folds.features[f].train, train_labels, classes, options);
  FoldOutcome out;
  out.decisions = decision_values(fit, folds.features[f].test);
  out.predicted = predicted_classes(out.decisions);
  out.score.iterations = fit.iterations;
  out.score.converged = fit.converged;
  const std::vector<int> truth = labels_of(labels, folds.test[f]);
  std::vector<int64_t> hits(static_cast<size_t>(classes), 0), support(static_cast<size_t>(classes), 0);
  int64_t correct = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    ++support[static_cast<size_t>(truth[i])];
    if (out.predicted[i] == truth[i]) {
      ++correct;
      ++hits[static_cast<size_t>(truth[i])];
    }
  }
  double recall = 0.0;
  int present = 0;
  for (int c = 0; c < classes; ++c) {
    if (support[static_cast<size_t>(c)] == 0) continue;
    recall += static_cast<double>(hits[static_cast<size_t>(c)]) / static_cast<double>(support[static_cast<size_t>(c)]);
    ++present;
  }
  const auto tested = static_cast<double>(truth.size());
  out.score.accuracy = truth.empty() ? 0.0 : static_cast<double>(correct) / tested;
  out.score.balanced_accuracy = present > 0 ? recall / present : 0.0;
  return out;
}

}  // namespace

std::vector<std::vector<int>> cv_folds(CvScheme scheme, const DecodingSamples& samples, int k) {
  if (scheme == CvScheme::kLeaveOneRunOut) return leave_one_group_out(samples.run, "run");
  if (scheme == CvScheme::kBlocks) return leave_one_group_out(samples.block, "block");
  const auto n = static_cast<int>(samples.size());
  if (k < 2 || k > n) throw std::invalid_argument(fmt::format("--folds {}: 2 to the {} samples", k, n));
  std::vector<std::vector<int>> folds;
  int start = 0;
  for (int f = 0; f < k; ++f) {
    const int size = n / k + (f < n % k ? 1 : 0);
    std::vector<int> fold(static_cast<size_t>(size));
    for (int i = 0; i < size; ++i) fold[static_cast<size_t>(i)] = start + i;
    folds.push_back(std::move(fold));
    start += size;
  }
  return folds;
}

PreparedFolds prepare_folds(const SampleSpace& space, std::vector<std::vector<int>> test_sets) {
  PreparedFolds p;
  p.test = std::move(test_sets);
  const size_t folds = p.test.size();
  p.train.resize(folds);
  p.features.resize(folds);
  host_ranges(folds, host_thread_count(), [&](size_t begin, size_t end, size_t) {
    for (size_t f = begin; f < end; ++f) {
      p.train[f] = complement(p.test[f], static_cast<size_t>(space.samples()));
      p.features[f] = space.fold(p.train[f], p.test[f]);
    }
  });
  return p;
}

CvResult cross_validate(DecoderModel model, const SolverOptions& options, const PreparedFolds& folds,
                        std::span<const int> labels, int classes) {
  const auto n = static_cast<Eigen::Index>(labels.size());
  CvResult r;
  r.predicted.assign(labels.size(), -1);
  r.fold_of.assign(labels.size(), -1);
  r.confusion = Eigen::MatrixXi::Zero(classes, classes);
  // The folds fitted on the host's threads (each its own outcome), then gathered in order.
  std::vector<FoldOutcome> outcomes(folds.test.size());
  std::vector<std::exception_ptr> failures(folds.test.size());
  host_ranges(folds.test.size(), host_thread_count(), [&](size_t begin, size_t end, size_t) {
    for (size_t f = begin; f < end; ++f) {
      try {
        outcomes[f] = run_fold(model, options, folds, f, labels, classes);
      } catch (...) {
        failures[f] = std::current_exception();
      }
    }
  });
  for (const std::exception_ptr& e : failures) {
    if (e) std::rethrow_exception(e);
  }
  for (size_t f = 0; f < folds.test.size(); ++f) {
    const FoldOutcome& o = outcomes[f];
    if (r.decisions.size() == 0) {
      r.decisions = Eigen::MatrixXd::Constant(n, o.decisions.cols(), std::numeric_limits<double>::quiet_NaN());
    }
    for (size_t i = 0; i < folds.test[f].size(); ++i) {
      const int sample = folds.test[f][i];
      r.decisions.row(sample) = o.decisions.row(static_cast<Eigen::Index>(i));
      r.predicted[static_cast<size_t>(sample)] = o.predicted[i];
      r.fold_of[static_cast<size_t>(sample)] = static_cast<int>(f);
      ++r.confusion(labels[static_cast<size_t>(sample)], o.predicted[i]);
    }
    r.mean_accuracy += o.score.accuracy;
    r.mean_balanced_accuracy += o.score.balanced_accuracy;
    r.folds.push_back(o.score);
  }
  r.mean_accuracy /= static_cast<double>(r.folds.size());
  r.mean_balanced_accuracy /= static_cast<double>(r.folds.size());
  return r;
}

double cross_validated_accuracy(DecoderModel model, const SolverOptions& options, const PreparedFolds& folds,
                                std::span<const int> labels, int classes) {
  double sum = 0.0;
  for (size_t f = 0; f < folds.test.size(); ++f)
    sum += run_fold(model, options, folds, f, labels, classes).score.accuracy;
  return sum / static_cast<double>(folds.test.size());
}

}  // namespace rtf
