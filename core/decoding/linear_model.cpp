// The linear decoders' front (core/decoding/linear_model.hpp): model names, input checks, the dispatch to the solvers
// (core/decoding/{logistic,svm,ridge}_solver.hpp) and the decision values, predictions and probabilities of a fit.
#include "core/decoding/linear_model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "core/decoding/logistic_solver.hpp"
#include "core/decoding/ridge_solver.hpp"
#include "core/decoding/svm_solver.hpp"

namespace rtf {

namespace {

double sigmoid(double t) {
  if (t >= 0) return 1.0 / (1.0 + std::exp(-t));
  const double e = std::exp(t);
  return e / (1.0 + e);
}

void check_positive(double value, const char* what) {
  if (!(value > 0) || !std::isfinite(value)) {
    throw std::invalid_argument(fmt::format("linear model: {} must be positive and finite, not {}", what, value));
  }
}

void check_inputs(DecoderModel model, const Eigen::MatrixXd& features, std::span<const int> labels, int classes,
                  const SolverOptions& options) {
  const std::string name = decoder_model_name(model);
  if (classes < 2) throw std::invalid_argument(fmt::format("{}: {} classes, at least 2 are needed", name, classes));
  if (features.rows() == 0) throw std::invalid_argument(fmt::format("{}: no samples", name));
  if (static_cast<size_t>(features.rows()) != labels.size()) {
    throw std::invalid_argument(
        fmt::format("{}: {} samples of features but {} labels", name, features.rows(), labels.size()));
  }
  if (!features.allFinite()) throw std::invalid_argument(fmt::format("{}: non-finite features", name));
  std::vector<int> count(static_cast<size_t>(classes), 0);
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      throw std::invalid_argument(
          fmt::format("{}: label {} of sample {} is not in 0..{}", name, labels[i], i, classes - 1));
    }
    ++count[static_cast<size_t>(labels[i])];
  }
  for (int k = 0; k < classes; ++k) {
    if (count[static_cast<size_t>(k)] == 0) {
      throw std::invalid_argument(fmt::format("{}: class {} has no samples", name, k));
    }
  }
  if (model == DecoderModel::kRidge) {
    check_positive(options.alpha, "alpha");
  } else {
    check_positive(options.c, "C");
    check_positive(options.tolerance, "the tolerance");
    if (options.max_iterations < 1) {
      throw std::invalid_argument(fmt::format("{}: max_iterations {} < 1", name, options.max_iterations));
    }
  }
  if (model == DecoderModel::kSvmHinge || model == DecoderModel::kSvmSquaredHinge) {
    check_positive(options.intercept_scaling, "the intercept scaling");
  }
}

}  // namespace

DecoderModel decoder_model(const std::string& name, const std::string& loss) {
  if (name == "logistic") return DecoderModel::kLogistic;
  if (name == "ridge") return DecoderModel::kRidge;
  if (name == "svm-squared-hinge") return DecoderModel::kSvmSquaredHinge;  // decoder_model_name's names too
  if (name == "svm-hinge") return DecoderModel::kSvmHinge;
  if (name == "svm") {
    if (loss == "squared_hinge") return DecoderModel::kSvmSquaredHinge;
    if (loss == "hinge") return DecoderModel::kSvmHinge;
    throw std::invalid_argument(fmt::format("unknown SVM loss \"{}\" (squared_hinge or hinge)", loss));
  }
  throw std::invalid_argument(fmt::format("unknown decoder model \"{}\" (logistic, svm or ridge)", name));
}

std::string decoder_model_name(DecoderModel model) {
  switch (model) {
    case DecoderModel::kLogistic:
      return "logistic";
    case DecoderModel::kSvmSquaredHinge:
      return "svm-squared-hinge";
    case DecoderModel::kSvmHinge:
      return "svm-hinge";
    case DecoderModel::kRidge:
      return "ridge";
  }
  throw std::invalid_argument(fmt::format("unknown decoder model {}", static_cast<int>(model)));
}

bool has_probabilities(DecoderModel model) {
  return model == DecoderModel::kLogistic;
}

LinearFit fit_linear_model(DecoderModel model, const Eigen::MatrixXd& features, std::span<const int> labels,
                           int classes, const SolverOptions& options) {
  check_inputs(model, features, labels, classes, options);
  switch (model) {
    case DecoderModel::kLogistic:
      return fit_logistic(features, labels, classes, options);
    case DecoderModel::kSvmSquaredHinge:
      return fit_svm(features, labels, classes, true, options);
    case DecoderModel::kSvmHinge:
      return fit_svm(features, labels, classes, false, options);
    case DecoderModel::kRidge:
      return fit_ridge(features, labels, classes, options);
  }
  throw std::invalid_argument(fmt::format("unknown decoder model {}", static_cast<int>(model)));
}

Eigen::MatrixXd decision_values(const LinearFit& fit, const Eigen::MatrixXd& features) {
  if (features.cols() != fit.coef.rows() || fit.intercept.size() != fit.coef.cols()) {
    throw std::invalid_argument(fmt::format("decision values: {} feature columns for a fit of {} x {} (intercept {})",
                                            features.cols(), fit.coef.rows(), fit.coef.cols(), fit.intercept.size()));
  }
  Eigen::MatrixXd d = features * fit.coef;
  d.rowwise() += fit.intercept.transpose();
  return d;
}

std::vector<int> predicted_classes(const Eigen::MatrixXd& decisions) {
  if (decisions.cols() == 0) throw std::invalid_argument("predicted classes: no decision functions");
  std::vector<int> predicted(static_cast<size_t>(decisions.rows()), 0);
  for (Eigen::Index i = 0; i < decisions.rows(); ++i) {
    if (decisions.cols() == 1) {
      predicted[static_cast<size_t>(i)] = decisions(i, 0) > 0 ? 1 : 0;
      continue;
    }
    Eigen::Index best = 0;
    for (Eigen::Index k = 1; k < decisions.cols(); ++k) {
      if (decisions(i, k) > decisions(i, best)) best = k;
    }
    predicted[static_cast<size_t>(i)] = static_cast<int>(best);
  }
  return predicted;
}

Eigen::MatrixXd class_probabilities(const Eigen::MatrixXd& decisions) {
  if (decisions.cols() == 0) throw std::invalid_argument("class probabilities: no decision functions");
  if (decisions.cols() == 1) {
    Eigen::MatrixXd p(decisions.rows(), 2);
    for (Eigen::Index i = 0; i < decisions.rows(); ++i) {
      p(i, 0) = sigmoid(-decisions(i, 0));
      p(i, 1) = sigmoid(decisions(i, 0));
    }
    return p;
  }
  Eigen::MatrixXd p = (decisions.colwise() - decisions.rowwise().maxCoeff()).array().exp();
  p.array().colwise() /= p.rowwise().sum().array();
  return p;
}

}  // namespace rtf
