// Least-squares detrending residuals in double precision (reference for the projection kernel).
#include "core/reference/detrend_reference.hpp"

#include <Eigen/Dense>

namespace rtf::reference {

std::vector<double> detrend(std::span<const float> data, int64_t num_voxels, const Eigen::MatrixXd& design,
                            bool remove_mean) {
  const Eigen::Index nt = design.rows();
  // The least-squares fit operator (X^T X)^-1 X^T, p x nt.
  const Eigen::MatrixXd xtx = design.transpose() * design;
  const Eigen::MatrixXd fit_operator = xtx.ldlt().solve(design.transpose());
  std::vector<double> out(data.size());
  Eigen::VectorXd y(nt);
  for (int64_t v = 0; v < num_voxels; ++v) {
    for (Eigen::Index t = 0; t < nt; ++t) y(t) = data[static_cast<size_t>(t * num_voxels + v)];
    const Eigen::VectorXd beta = fit_operator * y;
    Eigen::VectorXd r = y - design * beta;
    if (!remove_mean) r.array() += y.mean();
    for (Eigen::Index t = 0; t < nt; ++t) out[static_cast<size_t>(t * num_voxels + v)] = r(t);
  }
  return out;
}

}  // namespace rtf::reference
