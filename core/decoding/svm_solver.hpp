// The linear SVM behind DecoderModel::kSvmSquaredHinge and kSvmHinge (core/decoding/linear_model.hpp): sklearn's
// LinearSVC (liblinear) objective with its penalised intercept, by dual coordinate descent.
#pragma once

#include <Eigen/Core>
#include <span>

#include "core/decoding/linear_model.hpp"

namespace rtf {

// min 0.5 (|w|^2 + beta^2) + C sum loss(y (x.w + beta s)), s = options.intercept_scaling, intercept = beta s;
// loss(m) = max(0, 1 - m)^2 (squared_hinge) or max(0, 1 - m). classes == 2: one problem, positive = class 1;
// classes > 2: one-vs-rest, class k positive in column k. The inputs are the validated ones of fit_linear_model.
LinearFit fit_svm(const Eigen::MatrixXd& features, std::span<const int> labels, int classes, bool squared_hinge,
                  const SolverOptions& options);

}  // namespace rtf
