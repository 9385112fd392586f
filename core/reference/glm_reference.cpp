// Reference GLM: whitening, pseudo-inverse solve, explicit residuals, contrasts, t and F per voxel.
#include "core/reference/glm_reference.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace rtf::reference {

Eigen::MatrixXd ar1_whiten(const Eigen::MatrixXd& m, double rho) {
  Eigen::MatrixXd out(m.rows(), m.cols());
  if (m.rows() == 0) return out;
  out.row(0) = std::sqrt(1.0 - rho * rho) * m.row(0);
  for (Eigen::Index t = 1; t < m.rows(); ++t) out.row(t) = m.row(t) - rho * m.row(t - 1);
  return out;
}

GlmResult fit_glm(const Eigen::MatrixXd& data, const Eigen::MatrixXd& design, const std::vector<GlmContrast>& contrasts,
                  double rho, std::optional<std::span<const uint8_t>> mask) {
  if (data.rows() != design.rows()) throw std::invalid_argument("reference GLM: data and design rows differ");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Eigen::MatrixXd y = ar1_whiten(data, rho);
  const Eigen::MatrixXd x = ar1_whiten(design, rho);
  const GlmModel model = make_glm_model(x, contrasts);
  const Eigen::Index v = data.cols(), p = design.cols();
  GlmResult r;
  r.dof = model.dof;
  r.beta = model.pinv_xtx * x.transpose() * y;
  const Eigen::MatrixXd residual = y - x * r.beta;
  r.sigma2 = residual.colwise().squaredNorm().transpose() / model.dof;
  if (model.dof <= 0) r.sigma2.setConstant(nan);
  int nt = 0, nf = 0;
  for (const GlmContrast& c : contrasts) (c.is_f() ? nf : nt)++;
  r.contrast = Eigen::MatrixXd::Constant(nt, v, nan);
  r.t = Eigen::MatrixXd::Constant(nt, v, nan);
  r.f = Eigen::MatrixXd::Constant(nf, v, nan);
  for (Eigen::Index i = 0; i < v; ++i) {
    if (mask && (*mask)[static_cast<size_t>(i)] == 0) {
      r.beta.col(i).setConstant(nan);
      r.sigma2[i] = nan;
      continue;
    }
    const bool defined = r.sigma2[i] > 0.0;
    int kt = 0, kf = 0;
    for (const GlmContrast& c : contrasts) {
      if (!c.is_f()) {
        const size_t k = static_cast<size_t>(kt);
        if (model.t_estimable[k]) {
          const double estimate = (c.weights * r.beta.col(i))(0, 0);
          r.contrast(kt, i) = estimate;
          if (defined) r.t(kt, i) = estimate / std::sqrt(r.sigma2[i] * model.t_variance[k]);
        }
        ++kt;
        continue;
      }
      const size_t k = static_cast<size_t>(kf);
      if (model.f_estimable[k] && defined) {
        const Eigen::VectorXd cb = c.weights * r.beta.col(i);
        r.f(kf, i) = cb.dot(model.f_middle[k] * cb) / (model.f_dof[k] * r.sigma2[i]);
      }
      ++kf;
    }
  }
  (void)p;
  return r;
}

}  // namespace rtf::reference
