// Pearson and Spearman correlation matrices in double, pair by pair.
#include "core/reference/connectome_reference.hpp"

#include <cmath>
#include <limits>

namespace rtf::reference {

Eigen::MatrixXd pearson_matrix(const Eigen::MatrixXd& series) {
  const Eigen::Index n = series.rows(), l = series.cols();
  Eigen::MatrixXd r(n, n);
  for (Eigen::Index a = 0; a < n; ++a) {
    for (Eigen::Index b = 0; b < n; ++b) {
      const double ma = series.row(a).mean(), mb = series.row(b).mean();
      double sab = 0, saa = 0, sbb = 0;
      for (Eigen::Index t = 0; t < l; ++t) {
        const double da = series(a, t) - ma, db = series(b, t) - mb;
        sab += da * db;
        saa += da * da;
        sbb += db * db;
      }
      r(a, b) = saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : std::numeric_limits<double>::quiet_NaN();
    }
  }
  return r;
}

Eigen::MatrixXd spearman_matrix(const Eigen::MatrixXd& series) {
  Eigen::MatrixXd ranks(series.rows(), series.cols());
  for (Eigen::Index a = 0; a < series.rows(); ++a) {
    for (Eigen::Index t = 0; t < series.cols(); ++t) {
      double smaller = 0, equal = 0;
      for (Eigen::Index u = 0; u < series.cols(); ++u) {
        smaller += series(a, u) < series(a, t) ? 1 : 0;
        equal += series(a, u) == series(a, t) ? 1 : 0;
      }
      ranks(a, t) = 1.0 + smaller + (equal - 1.0) / 2.0;
    }
  }
  return pearson_matrix(ranks);
}

Eigen::MatrixXd kendall_matrix(const Eigen::MatrixXd& series) {
  const Eigen::Index n = series.rows(), l = series.cols();
  const auto sign = [](double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); };
  Eigen::MatrixXd tau(n, n);
  for (Eigen::Index a = 0; a < n; ++a) {
    for (Eigen::Index b = 0; b < n; ++b) {
      double s = 0, da = 0, db = 0;
      for (Eigen::Index u = 0; u < l; ++u) {
        for (Eigen::Index v = u + 1; v < l; ++v) {
          const double sa = sign(series(a, v) - series(a, u)), sb = sign(series(b, v) - series(b, u));
          s += sa * sb;
          da += sa != 0 ? 1 : 0;
          db += sb != 0 ? 1 : 0;
        }
      }
      tau(a, b) = da > 0 && db > 0 ? s / std::sqrt(da * db) : std::numeric_limits<double>::quiet_NaN();
    }
  }
  return tau;
}

}  // namespace rtf::reference
