// The linear decoders' training in double precision on a small, reduced feature space (docs/algorithms/decoding.md):
// L2-regularised logistic regression (binary, or multinomial for more than two classes), the linear SVM (hinge or
// squared hinge, one-vs-rest for more than two classes) and the ridge classifier, each minimising exactly the objective
// scikit-learn's estimator minimises (LogisticRegression, LinearSVC, RidgeClassifier), so that a fit here and there
// agree to the solvers' tolerance. The features are n samples x r columns: the voxels themselves when there are fewer
// voxels than samples, else the samples' coordinates in the span of the training set (core/decoding/reduced_space.hpp,
// where the Gram matrix computed on the device is factorised); an L2 penalty makes the two fits the same model.
#pragma once

#include <Eigen/Core>
#include <span>
#include <string>
#include <vector>

namespace rtf {

enum class DecoderModel {
  kLogistic,         // sklearn LogisticRegression(penalty="l2", C): C sum log-loss + |w|^2 / 2, intercept not penalised
  kSvmSquaredHinge,  // sklearn LinearSVC(loss="squared_hinge", C): |[w, b s]|^2 / 2 + C sum max(0, 1 - y f)^2
  kSvmHinge,         // sklearn LinearSVC(loss="hinge", C): |[w, b s]|^2 / 2 + C sum max(0, 1 - y f)
  kRidge,            // sklearn RidgeClassifier(alpha): |Y - X w - b|^2 + alpha |w|^2, targets +-1, intercept free
};

// "logistic", "svm" (with `loss` "squared_hinge" or "hinge"), "ridge". Throws std::invalid_argument naming the value.
DecoderModel decoder_model(const std::string& name, const std::string& loss = "squared_hinge");
std::string decoder_model_name(DecoderModel model);  // "logistic", "svm-squared-hinge", "svm-hinge", "ridge"
bool has_probabilities(DecoderModel model);          // logistic only

struct SolverOptions {
  double c = 1.0;                  // logistic and SVM: the loss's weight C (sklearn's C)
  double alpha = 1.0;              // ridge: the penalty's weight (sklearn's alpha)
  double intercept_scaling = 1.0;  // SVM: the constant feature s whose weight b s is the (penalised) intercept
  double tolerance = 1e-10;        // stopping rule of each solver, documented in docs/algorithms/decoding.md
  int max_iterations = 10000;      // Newton iterations (logistic) or passes over the samples (SVM)
};

// A fitted model in the reduced space. M = 1 decision function for two classes (positive: class 1, as sklearn's
// classes_[1]), else M = K, one per class.
struct LinearFit {
  Eigen::MatrixXd coef;       // r x M
  Eigen::VectorXd intercept;  // M
  int iterations = 0;         // Newton iterations or passes (the largest over one-vs-rest problems)
  bool converged = false;     // the stopping rule was met within max_iterations
};

// Fits `model` to `features` (n x r) and `labels` (n class indices in 0..classes-1, every class present, classes >= 2).
// Throws std::invalid_argument for a label out of range, a class without samples, fewer than 2 classes, n = 0 or
// sizes that do not match, and non-finite features.
LinearFit fit_linear_model(DecoderModel model, const Eigen::MatrixXd& features, std::span<const int> labels,
                           int classes, const SolverOptions& options);

// features (n x r) -> decision values (n x M): features * coef + intercept.
Eigen::MatrixXd decision_values(const LinearFit& fit, const Eigen::MatrixXd& features);

// The predicted classes: M = 1: 1 where the decision value > 0, else 0; M > 1: the first largest decision value (as
// numpy's argmax in sklearn's predict).
std::vector<int> predicted_classes(const Eigen::MatrixXd& decisions);

// Logistic only: class probabilities (n x K): M = 1: [1 - sigmoid(d), sigmoid(d)]; M > 1: softmax over the row (as
// sklearn's predict_proba for the multinomial model).
Eigen::MatrixXd class_probabilities(const Eigen::MatrixXd& decisions);

}  // namespace rtf
