// The L2-regularised logistic regression behind DecoderModel::kLogistic (core/decoding/linear_model.hpp): Newton's
// method on sklearn's LogisticRegression(penalty="l2") objective, binary or multinomial.
#pragma once

#include <Eigen/Core>
#include <span>

#include "core/decoding/linear_model.hpp"

namespace rtf {

// classes == 2: min 0.5 |w|^2 + C sum log(1 + exp(-y (x.w + b))), y = +1 for class 1, one decision function.
// classes > 2: min 0.5 |W|_F^2 + C sum -log softmax(x W + b)_y, K decision functions, intercepts centred to sum 0.
// The inputs are the validated ones of fit_linear_model (labels in 0..classes-1, all finite, C > 0).
LinearFit fit_logistic(const Eigen::MatrixXd& features, std::span<const int> labels, int classes,
                       const SolverOptions& options);

}  // namespace rtf
