// Reference permutation test: explicit Freedman-Lane data and a least-squares refit per rearrangement.
#include "core/reference/permutation_reference.hpp"

#include <Eigen/LU>
#include <Eigen/QR>
#include <Eigen/SVD>
#include <cmath>
#include <limits>

namespace rtf::reference {

namespace {

// t (one row, f_test false) or F (f_test true) of the contrast rows C, by explicit Freedman-Lane data and refits.
VoxelPermutationResult permutation_test(const Eigen::MatrixXd& design, const Eigen::MatrixXd& rows, bool f_test,
                                        const PermutationSet& set, const std::vector<float>& data, size_t voxels) {
  const Eigen::Index n = design.rows(), p = design.cols();
  const Eigen::VectorXd c = rows.row(0).transpose();
  // The nuisance space Z = M (I - C^+ C) and its projector.
  const Eigen::MatrixXd c_pinv = rows.transpose() * (rows * rows.transpose()).inverse();
  const Eigen::MatrixXd z = design * (Eigen::MatrixXd::Identity(p, p) - c_pinv * rows);
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(z, Eigen::ComputeThinU);
  Eigen::Index rank = 0;
  for (Eigen::Index i = 0; i < svd.singularValues().size(); ++i) {
    if (svd.singularValues()[i] > 1e-10 * svd.singularValues()[0]) ++rank;
  }
  const Eigen::MatrixXd qz = svd.matrixU().leftCols(rank);
  const Eigen::MatrixXd hz = qz * qz.transpose();
  const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(design);
  const Eigen::MatrixXd xtx_inv = (design.transpose() * design).inverse();
  const double variance_factor = c.dot(xtx_inv * c);
  const Eigen::MatrixXd middle = (rows * xtx_inv * rows.transpose()).inverse();  // F: [C (M'M)^-1 C']^-1
  const auto q = static_cast<double>(rows.rows());
  const auto dof = static_cast<double>(n - p);

  VoxelPermutationResult r;
  r.t.assign(voxels, 0.0f);
  r.exceed.assign(voxels, 0U);
  r.max_null.assign(static_cast<size_t>(set.count), -std::numeric_limits<float>::infinity());
  std::vector<double> observed(voxels, 0.0);
  Eigen::VectorXd y(n), ystar(n);
  for (int k = 0; k < set.count; ++k) {
    const size_t base = static_cast<size_t>(k) * static_cast<size_t>(n);
    double largest = -std::numeric_limits<double>::infinity();
    for (size_t v = 0; v < voxels; ++v) {
      for (Eigen::Index i = 0; i < n; ++i) y[i] = data[static_cast<size_t>(i) * voxels + v];
      const Eigen::VectorXd fitted = hz * y;
      const Eigen::VectorXd e = y - fitted;
      for (Eigen::Index i = 0; i < n; ++i) {
        const auto ii = static_cast<size_t>(i);
        ystar[i] = set.kind == PermutationKind::kSignFlip ? set.signs[base + ii] * e[i] : e[set.order[base + ii]];
      }
      ystar += fitted;
      const Eigen::VectorXd beta = qr.solve(ystar);
      const double rss = (ystar - design * beta).squaredNorm();
      double t = 0.0;
      if (rss > 1e-12 * e.squaredNorm()) {
        if (f_test) {
          const Eigen::VectorXd cb = rows * beta;
          t = cb.dot(middle * cb) / q / (rss / dof);
        } else {
          t = c.dot(beta) / std::sqrt(rss / dof * variance_factor);
        }
      }
      if (k == 0) observed[v] = t;
      if (t >= observed[v] - 1e-5 * std::abs(observed[v])) ++r.exceed[v];
      largest = std::max(largest, t);
    }
    r.max_null[static_cast<size_t>(k)] = static_cast<float>(largest);
  }
  for (size_t v = 0; v < voxels; ++v) r.t[v] = static_cast<float>(observed[v]);
  return r;
}

}  // namespace

VoxelPermutationResult voxel_permutation_test(const Eigen::MatrixXd& design, const Eigen::RowVectorXd& contrast,
                                              const PermutationSet& set, const std::vector<float>& data,
                                              size_t voxels) {
  return permutation_test(design, contrast, false, set, data, voxels);
}

VoxelPermutationResult voxel_permutation_test_f(const Eigen::MatrixXd& design, const Eigen::MatrixXd& rows,
                                                const PermutationSet& set, const std::vector<float>& data,
                                                size_t voxels) {
  return permutation_test(design, rows, true, set, data, voxels);
}

}  // namespace rtf::reference
