// The ridge classifier's closed form (core/decoding/ridge_solver.hpp): centre the features and the targets, solve
// (Fc^T Fc + alpha I) w = Fc^T Yc by LDLT, b = mean(Y) - mean(F) w.
#include "core/decoding/ridge_solver.hpp"

#include <Eigen/Cholesky>

namespace rtf {

LinearFit fit_ridge(const Eigen::MatrixXd& features, std::span<const int> labels, int classes,
                    const SolverOptions& options) {
  const Eigen::Index n = features.rows(), r = features.cols();
  const int m = classes > 2 ? classes : 1;
  Eigen::MatrixXd targets = Eigen::MatrixXd::Constant(n, m, -1.0);
  for (Eigen::Index i = 0; i < n; ++i) {
    const int label = labels[static_cast<size_t>(i)];
    if (classes > 2) {
      targets(i, label) = 1.0;
    } else if (label == 1) {
      targets(i, 0) = 1.0;
    }
  }
  const Eigen::RowVectorXd feature_mean = features.colwise().mean();
  const Eigen::RowVectorXd target_mean = targets.colwise().mean();
  const Eigen::MatrixXd centred = features.rowwise() - feature_mean;
  Eigen::MatrixXd normal = Eigen::MatrixXd::Zero(r, r);
  normal.selfadjointView<Eigen::Lower>().rankUpdate(centred.transpose());
  normal.diagonal().array() += options.alpha;
  LinearFit fit;
  fit.coef = normal.ldlt().solve(centred.transpose() * (targets.rowwise() - target_mean));
  fit.intercept = (target_mean - feature_mean * fit.coef).transpose();
  fit.iterations = 1;
  fit.converged = true;
  return fit;
}

}  // namespace rtf
