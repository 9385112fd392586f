// GlmModel: pseudo-inverse, rank, degrees of freedom and contrast factors of one fit.
#include "core/glm/glm_model.hpp"

#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <stdexcept>

namespace rtf {

namespace {

// Eigen-decomposition of a symmetric positive semi-definite matrix with its numerical rank: eigenvalues above
// max(eigenvalue) * columns * 1e-12 count.
struct RankedEigen {
  Eigen::MatrixXd vectors;
  Eigen::VectorXd values;
  std::vector<bool> kept;
  Eigen::Index rank = 0;
};

RankedEigen ranked_eigen(const Eigen::MatrixXd& a) {
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(a);
  if (eig.info() != Eigen::Success) throw std::runtime_error("GLM: eigen-decomposition failed");
  RankedEigen r{eig.eigenvectors(), eig.eigenvalues(), {}, 0};
  const double largest = r.values.size() > 0 ? r.values.cwiseAbs().maxCoeff() : 0.0;
  const double tolerance = largest * static_cast<double>(a.rows()) * 1e-12;
  for (Eigen::Index i = 0; i < r.values.size(); ++i) {
    r.kept.push_back(r.values[i] > tolerance);
    if (r.kept.back()) ++r.rank;
  }
  return r;
}

Eigen::MatrixXd pinv_of(const RankedEigen& e) {
  Eigen::VectorXd inverse = Eigen::VectorXd::Zero(e.values.size());
  for (Eigen::Index i = 0; i < e.values.size(); ++i) {
    if (e.kept[static_cast<size_t>(i)]) inverse[i] = 1.0 / e.values[i];
  }
  return e.vectors * inverse.asDiagonal() * e.vectors.transpose();
}

// Projector onto the row space of X (the span of X'X's kept eigenvectors): stable however ill-conditioned X'X is.
Eigen::MatrixXd row_space_projector(const RankedEigen& e) {
  Eigen::MatrixXd kept(e.vectors.rows(), e.rank);
  Eigen::Index k = 0;
  for (Eigen::Index i = 0; i < e.values.size(); ++i) {
    if (e.kept[static_cast<size_t>(i)]) kept.col(k++) = e.vectors.col(i);
  }
  return kept * kept.transpose();
}

// c is estimable when it lies in the row space of X. The tolerance, 1e-4 of |c|, allows for the directions that the
// rank threshold drops: early in a run the full-run DCT drift columns are nearly collinear, and a task contrast keeps
// a component of ~1e-6 along them (measured on a 2,000-volume block design truncated to 60-500 volumes).
bool estimable(const Eigen::MatrixXd& c, const Eigen::MatrixXd& projector) {
  const double norm = c.norm();
  return norm > 0.0 && (c - c * projector).norm() <= 1e-4 * norm;
}

}  // namespace

Eigen::MatrixXd symmetric_pinv(const Eigen::MatrixXd& a, Eigen::Index* rank) {
  const RankedEigen e = ranked_eigen(a);
  if (rank != nullptr) *rank = e.rank;
  return pinv_of(e);
}

GlmModel make_glm_model(const Eigen::MatrixXd& rows, const std::vector<GlmContrast>& contrasts) {
  return make_glm_model_from_xtx(rows.transpose() * rows, rows.rows(), contrasts);
}

GlmModel make_glm_model_from_xtx(const Eigen::MatrixXd& xtx, Eigen::Index rows,
                                 const std::vector<GlmContrast>& contrasts, const std::vector<bool>* active) {
  GlmModel m;
  const Eigen::Index p = xtx.cols();
  std::vector<Eigen::Index> columns;
  for (Eigen::Index j = 0; j < p; ++j) {
    if (active == nullptr || (*active)[static_cast<size_t>(j)]) columns.push_back(j);
  }
  if (active != nullptr && static_cast<Eigen::Index>(active->size()) != p) {
    throw std::invalid_argument("GLM: the active-column mask differs from the design's width");
  }
  const auto q = static_cast<Eigen::Index>(columns.size());
  Eigen::MatrixXd block(q, q);
  for (Eigen::Index a = 0; a < q; ++a) {
    for (Eigen::Index b = 0; b < q; ++b)
      block(a, b) = xtx(columns[static_cast<size_t>(a)], columns[static_cast<size_t>(b)]);
  }
  const RankedEigen e = ranked_eigen(block);
  const Eigen::MatrixXd block_pinv = pinv_of(e), block_projector = row_space_projector(e);
  m.pinv_xtx = Eigen::MatrixXd::Zero(p, p);
  Eigen::MatrixXd projector = Eigen::MatrixXd::Zero(p, p);
  for (Eigen::Index a = 0; a < q; ++a) {
    for (Eigen::Index b = 0; b < q; ++b) {
      m.pinv_xtx(columns[static_cast<size_t>(a)], columns[static_cast<size_t>(b)]) = block_pinv(a, b);
      projector(columns[static_cast<size_t>(a)], columns[static_cast<size_t>(b)]) = block_projector(a, b);
    }
  }
  m.rank = e.rank;
  m.dof = static_cast<double>(rows - m.rank);
  for (const GlmContrast& c : contrasts) {
    if (c.weights.cols() != xtx.cols() || c.weights.rows() < 1) {
      throw std::invalid_argument(
          fmt::format("contrast {}: {} weights for a design of {} columns", c.name, c.weights.cols(), p));
    }
    if (!c.weights.allFinite()) throw std::invalid_argument(fmt::format("contrast {}: non-finite weights", c.name));
    const bool ok = estimable(c.weights, projector);
    if (!c.is_f()) {
      m.t_estimable.push_back(ok);
      m.t_variance.push_back(ok ? (c.weights * m.pinv_xtx * c.weights.transpose())(0, 0) : 0.0);
      continue;
    }
    // Independent rows only (an F contrast may repeat itself), then (C pinv C')^-1.
    const Eigen::MatrixXd cpc = c.weights * m.pinv_xtx * c.weights.transpose();
    Eigen::Index f_rank = 0;
    const Eigen::MatrixXd middle = symmetric_pinv(cpc, &f_rank);
    m.f_estimable.push_back(ok && f_rank > 0);
    m.f_rows.push_back(c.weights);
    // With dependent rows, pinv(C pinv C') still gives the right quadratic form; q is the numerator's dof.
    m.f_middle.push_back(ok ? middle : Eigen::MatrixXd::Zero(cpc.rows(), cpc.cols()));
    m.f_dof.push_back(static_cast<double>(f_rank));
  }
  return m;
}

}  // namespace rtf
