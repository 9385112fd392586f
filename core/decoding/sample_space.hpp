// How a cross-validation fold sees the samples (docs/algorithms/decoding.md). With at least as many samples as
// features (p <= n) the fold's features are the samples' rows themselves (primal). With more features than samples
// only the Gram matrix K = X X^T is kept (dual): an L2-penalised linear model's weights lie in the span of its training
// samples, w = X_train^T beta, so the model fitted to the coordinates F = U S of the training samples in that span
// (K_train = U S^2 U^T, eigenvalues below 1e-12 of the largest dropped) is the same model, F_test = K_test,train U S^-1
// are the test samples' coordinates, and beta = U S^-1 z turns the fitted weights z back into sample weights
// (core/decoding/feature_weights.hpp then gives w on the device). Fitting costs O(n^3) instead of O(n p).
#pragma once

#include <Eigen/Core>
#include <span>

namespace rtf {

class SampleSpace {
 public:
  static SampleSpace primal(Eigen::MatrixXd features);  // n x p
  static SampleSpace dual(Eigen::MatrixXd gram);        // n x n

  struct Fold {
    Eigen::MatrixXd train, test;  // n_train x r, n_test x r
    Eigen::MatrixXd to_samples;   // dual: n_train x r, beta = to_samples z; primal: empty (z is w)
  };
  // The features of the samples `train` and `test` (indices into the samples). Throws std::invalid_argument for an
  // empty training set or an index out of range.
  Fold fold(std::span<const int> train, std::span<const int> test) const;

  bool is_dual() const { return dual_; }
  Eigen::Index samples() const { return data_.rows(); }

 private:
  SampleSpace(Eigen::MatrixXd data, bool dual) : data_(std::move(data)), dual_(dual) {}
  Eigen::MatrixXd data_;  // features (primal) or Gram matrix (dual)
  bool dual_ = false;
};

}  // namespace rtf
