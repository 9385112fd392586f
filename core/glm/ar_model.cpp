// ArGlmModel from a design and contrasts: thin SVD, rank, contrasts in the orthonormal basis' coordinates.
#include "core/glm/ar_model.hpp"

#include <fmt/format.h>

#include <Eigen/SVD>
#include <algorithm>
#include <stdexcept>

namespace rtf {

int ArGlmModel::max_rows() const {
  int q = 1;
  for (const ArStatistic& s : statistics) q = std::max(q, static_cast<int>(s.rows.rows()));
  return q;
}

ArGlmModel make_ar_glm_model(const Eigen::MatrixXd& x, const std::vector<GlmContrast>& contrasts, int order) {
  if (order < 1 || order > 4) throw std::invalid_argument(fmt::format("AR order {} is not 1..4", order));
  if (x.cols() == 0 || !x.allFinite()) throw std::invalid_argument("AR GLM: the design is empty or not finite");
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(x, Eigen::ComputeThinU | Eigen::ComputeThinV);
  const Eigen::VectorXd& s = svd.singularValues();
  // The GLM's rule (symmetric_pinv on X'X): eigenvalues s^2 below max(s^2) * columns * 1e-12 count as zero.
  const double floor = s.size() ? s[0] * s[0] * static_cast<double>(x.cols()) * 1e-12 : 0.0;
  int rank = 0;
  while (rank < s.size() && s[rank] * s[rank] > floor) ++rank;
  ArGlmModel m;
  m.n = static_cast<int>(x.rows());
  m.order = order;
  m.columns = static_cast<int>(x.cols());
  m.rank = rank;
  m.dof = static_cast<double>(m.n - order - rank);
  if (rank == 0 || m.dof < 1) {
    throw std::invalid_argument(fmt::format(
        "AR({}) GLM: {} volumes leave no degrees of freedom for {} columns (rank {})", order, m.n, m.columns, rank));
  }
  m.basis = svd.matrixU().leftCols(rank);
  const Eigen::MatrixXd v = svd.matrixV().leftCols(rank);
  m.to_beta = v * s.head(rank).cwiseInverse().asDiagonal();
  for (const GlmContrast& c : contrasts) {
    if (c.weights.cols() != x.cols() || !c.weights.allFinite()) {
      throw std::invalid_argument(
          fmt::format("contrast {}: {} weights for a design of {} columns", c.name, c.weights.cols(), x.cols()));
    }
    ArStatistic stat;
    stat.is_f = c.is_f();
    for (Eigen::Index i = 0; i < c.weights.rows(); ++i) {
      const Eigen::RowVectorXd row = c.weights.row(i);
      const Eigen::RowVectorXd outside = row - (row * v) * v.transpose();
      if (outside.norm() > 1e-4 * std::max(row.norm(), 1e-300)) stat.estimable = false;
    }
    if (stat.estimable) {
      const Eigen::MatrixXd a = c.weights * m.to_beta;  // q x r: c' beta = a gamma
      if (!stat.is_f) {
        stat.rows = a;
      } else {
        const Eigen::JacobiSVD<Eigen::MatrixXd> sa(a, Eigen::ComputeThinV);
        const Eigen::VectorXd& sv = sa.singularValues();
        int q = 0;
        while (q < sv.size() && sv[q] > sv[0] * 1e-8) ++q;
        stat.rows = sa.matrixV().leftCols(q).transpose();
      }
    }
    m.statistics.push_back(std::move(stat));
  }
  return m;
}

}  // namespace rtf
