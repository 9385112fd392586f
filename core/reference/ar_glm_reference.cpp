// Reference AR(P) GLM: Yule-Walker, GLSAR whitening, Cochrane-Orcutt iterations with smoothed AR maps, and the
// whitening / re-colouring / null residuals of the first-level permutation scheme.
#include "core/reference/ar_glm_reference.hpp"

#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "core/glm/glm_model.hpp"
#include "core/reference/smoothing_reference.hpp"

namespace rtf::reference {

namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();

std::vector<GlmContrast> as_glm_contrasts(const std::vector<Eigen::MatrixXd>& contrasts) {
  std::vector<GlmContrast> out;
  for (size_t i = 0; i < contrasts.size(); ++i) out.push_back(GlmContrast{"c" + std::to_string(i), contrasts[i]});
  return out;
}

bool is_constant(const Eigen::VectorXd& y) {
  return y.size() == 0 || (y.array() == y[0]).all();
}

}  // namespace

Eigen::VectorXd yule_walker(const Eigen::VectorXd& e, int order) {
  if (order < 0) throw std::invalid_argument("yule_walker: negative order");
  const Eigen::Index n = e.size(), p = order;
  if (n <= p) throw std::invalid_argument("yule_walker: the series is not longer than the order");
  const Eigen::VectorXd d = e.array() - e.mean();
  Eigen::VectorXd c(p + 1);
  c[0] = d.squaredNorm() / static_cast<double>(n);
  for (Eigen::Index k = 1; k <= p; ++k) {
    c[k] = d.head(n - k).dot(d.tail(n - k)) / static_cast<double>(n - k);
  }
  if (c[0] == 0.0) return Eigen::VectorXd::Zero(p);
  Eigen::MatrixXd toeplitz(p, p);
  for (Eigen::Index i = 0; i < p; ++i) {
    for (Eigen::Index j = 0; j < p; ++j) toeplitz(i, j) = c[std::abs(i - j)];
  }
  return toeplitz.partialPivLu().solve(c.tail(p));
}

Eigen::MatrixXd ar_whiten(const Eigen::MatrixXd& m, const Eigen::VectorXd& rho) {
  const Eigen::Index n = m.rows(), p = rho.size();
  if (n < p) throw std::invalid_argument("ar_whiten: fewer rows than the AR order");
  Eigen::MatrixXd out(n - p, m.cols());
  for (Eigen::Index t = p; t < n; ++t) {
    out.row(t - p) = m.row(t);
    for (Eigen::Index k = 1; k <= p; ++k) out.row(t - p) -= rho[k - 1] * m.row(t - k);
  }
  return out;
}

Eigen::VectorXd ar_whiten_truncated(const Eigen::VectorXd& r, const Eigen::VectorXd& rho) {
  const Eigen::Index n = r.size(), p = rho.size();
  Eigen::VectorXd w(n);
  for (Eigen::Index t = 0; t < n; ++t) {
    w[t] = r[t];
    for (Eigen::Index k = 1; k <= std::min(t, p); ++k) w[t] -= rho[k - 1] * r[t - k];
  }
  return w;
}

Eigen::VectorXd ar_recolour(const Eigen::VectorXd& w, const Eigen::VectorXd& rho) {
  const Eigen::Index n = w.size(), p = rho.size();
  Eigen::VectorXd y(n);
  for (Eigen::Index t = 0; t < n; ++t) {
    y[t] = w[t];
    for (Eigen::Index k = 1; k <= std::min(t, p); ++k) y[t] += rho[k - 1] * y[t - k];
  }
  return y;
}

ArVoxelFit fit_whitened(const Eigen::VectorXd& y, const Eigen::MatrixXd& x, const Eigen::VectorXd& rho,
                        const std::vector<Eigen::MatrixXd>& contrasts) {
  if (y.size() != x.rows()) throw std::invalid_argument("fit_whitened: the series and the design differ in length");
  const std::vector<GlmContrast> glm_contrasts = as_glm_contrasts(contrasts);
  const Eigen::VectorXd yw = ar_whiten(y, rho);
  const Eigen::MatrixXd xw = ar_whiten(x, rho);
  // Estimability in the row space of the unwhitened design; the variances from the whitened one.
  const GlmModel plain = make_glm_model(x, glm_contrasts);
  const GlmModel whitened = make_glm_model(xw, glm_contrasts);

  ArVoxelFit fit;
  // pinv(Xw) yw = pinv(Xw'Xw) Xw' yw
  fit.beta = whitened.pinv_xtx * xw.transpose() * yw;
  fit.dof = whitened.dof;
  if (fit.dof > 0) fit.sigma2 = (yw - xw * fit.beta).squaredNorm() / fit.dof;
  const bool defined = fit.dof > 0 && fit.sigma2 > 0.0;
  size_t kt = 0, kf = 0;
  for (const GlmContrast& c : glm_contrasts) {
    double stat = kNan;
    if (!c.is_f()) {
      if (defined && plain.t_estimable[kt] && whitened.t_estimable[kt]) {
        stat = (c.weights * fit.beta)(0, 0) / std::sqrt(fit.sigma2 * whitened.t_variance[kt]);
      }
      ++kt;
    } else {
      if (defined && plain.f_estimable[kf] && whitened.f_estimable[kf]) {
        const Eigen::VectorXd cb = c.weights * fit.beta;
        stat = cb.dot(whitened.f_middle[kf] * cb) / (whitened.f_dof[kf] * fit.sigma2);
      }
      ++kf;
    }
    fit.stat.push_back(stat);
  }
  return fit;
}

ArGlmReference fit_ar_glm(const Eigen::MatrixXd& data, std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask,
                          const Eigen::MatrixXd& x, const std::vector<Eigen::MatrixXd>& contrasts, int order,
                          int iterations, const std::array<std::vector<double>, 3>* ar_taps) {
  const Eigen::Index n = data.rows(), v = data.cols(), p = order;
  if (dims[0] * dims[1] * dims[2] != v) throw std::invalid_argument("fit_ar_glm: data columns differ from the grid");
  if (static_cast<Eigen::Index>(mask.size()) != v) throw std::invalid_argument("fit_ar_glm: mask size differs");
  if (x.rows() != n) throw std::invalid_argument("fit_ar_glm: data and design rows differ");
  if (order < 0 || iterations < 1 || n <= p) throw std::invalid_argument("fit_ar_glm: bad order or iterations");

  Eigen::Index rank = 0;
  (void)symmetric_pinv(x.transpose() * x, &rank);
  ArGlmReference out;
  out.dof = static_cast<double>(n - p - rank);
  out.rho = Eigen::MatrixXd::Zero(p, v);
  out.beta = Eigen::MatrixXd::Constant(x.cols(), v, kNan);
  out.sigma2 = Eigen::VectorXd::Constant(v, kNan);
  out.stat = Eigen::MatrixXd::Constant(static_cast<Eigen::Index>(contrasts.size()), v, kNan);

  for (int i = 1; i <= iterations; ++i) {
    // Fit every voxel in the mask with rho^(i-1).
    Eigen::MatrixXd next_rho = Eigen::MatrixXd::Zero(p, v);
    for (Eigen::Index j = 0; j < v; ++j) {
      if (mask[static_cast<size_t>(j)] == 0) continue;
      const Eigen::VectorXd y = data.col(j);
      const ArVoxelFit fit = fit_whitened(y, x, out.rho.col(j), contrasts);
      if (i == iterations) {
        out.beta.col(j) = fit.beta;
        out.sigma2[j] = fit.sigma2;
        for (size_t c = 0; c < fit.stat.size(); ++c) out.stat(static_cast<Eigen::Index>(c), j) = fit.stat[c];
      } else if (!is_constant(y)) {
        next_rho.col(j) = yule_walker(y - x * fit.beta, order);
      }
    }
    if (i == iterations) break;
    // rho^(i), each map smoothed inside the mask in float as on the device.
    if (ar_taps != nullptr) {
      for (Eigen::Index k = 0; k < p; ++k) {
        std::vector<float> map(static_cast<size_t>(v));
        for (Eigen::Index j = 0; j < v; ++j) map[static_cast<size_t>(j)] = static_cast<float>(next_rho(k, j));
        const std::vector<double> smoothed =
            smooth_volume(map, dims, *ar_taps, std::span<const uint8_t>(mask.data(), mask.size()));
        for (Eigen::Index j = 0; j < v; ++j) {
          next_rho(k, j) = mask[static_cast<size_t>(j)]
                               ? static_cast<double>(static_cast<float>(smoothed[static_cast<size_t>(j)]))
                               : 0.0;
        }
      }
    }
    out.rho = next_rho;
  }
  return out;
}

Eigen::MatrixXd null_residuals(const Eigen::MatrixXd& data, const Eigen::MatrixXd& x,
                               const std::vector<int>& nuisance) {
  if (data.rows() != x.rows()) throw std::invalid_argument("null_residuals: data and design rows differ");
  if (nuisance.empty()) return data;
  Eigen::MatrixXd z(x.rows(), static_cast<Eigen::Index>(nuisance.size()));
  for (size_t i = 0; i < nuisance.size(); ++i) {
    if (nuisance[i] < 0 || nuisance[i] >= x.cols()) throw std::invalid_argument("null_residuals: bad column");
    z.col(static_cast<Eigen::Index>(i)) = x.col(nuisance[i]);
  }
  // pinv(Z) = pinv(Z'Z) Z'
  const Eigen::MatrixXd gamma = symmetric_pinv(z.transpose() * z) * z.transpose() * data;
  return data - z * gamma;
}

}  // namespace rtf::reference
