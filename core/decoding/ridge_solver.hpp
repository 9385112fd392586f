// The ridge classifier behind DecoderModel::kRidge (core/decoding/linear_model.hpp): sklearn's RidgeClassifier with
// fit_intercept=True, solved in closed form.
#pragma once

#include <Eigen/Core>
#include <span>

#include "core/decoding/linear_model.hpp"

namespace rtf {

// min |Y - X w - 1 b^T|^2 + alpha |w|^2 with targets Y of +-1: one column (+1 for class 1) for two classes, else K
// columns (+1 for the sample's class). The inputs are the validated ones of fit_linear_model.
LinearFit fit_ridge(const Eigen::MatrixXd& features, std::span<const int> labels, int classes,
                    const SolverOptions& options);

}  // namespace rtf
