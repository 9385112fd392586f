// Tensor fit, Levenberg-Marquardt ball-and-stick fit and the sampler's starting state of every voxel.
#include "core/diffusion/ball_stick_init.hpp"

#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

#include "core/diffusion/ball_stick_signal.hpp"
#include "core/diffusion/diffusion_data.hpp"
#include "core/util/host_threads.hpp"

namespace rtf {
namespace {

constexpr int kMaxIterations = 100;
constexpr double kRelativeTolerance = 1e-8;
constexpr int kMaxParams = 2 + 3 * kBallStickMaxFibres + 1;

// ---- tensor ----

// Least squares of x b = y, weighted by w (nullptr: ordinary); false when the design is rank deficient.
bool solve_least_squares(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const Eigen::VectorXd* w,
                         Eigen::VectorXd& beta) {
  Eigen::MatrixXd a = x;
  Eigen::VectorXd c = y;
  if (w != nullptr) {
    const Eigen::VectorXd root = w->cwiseSqrt();
    a = root.asDiagonal() * x;
    c = root.cwiseProduct(y);
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
  qr.setThreshold(1e-10);
  if (qr.rank() < a.cols()) return false;
  beta = qr.solve(c);
  return beta.allFinite();
}

// ---- ball and stick ----

// The parameter vector: 0 log S0, 1 log d, fibre j at 2 + 3j: th, ph, t (f_j = sin^2 t_j * prod_{k<j} cos^2 t_k),
// model 2: log d_std last.
struct Layout {
  int fibres, model;
  int params() const { return 2 + 3 * fibres + (model == 2 ? 1 : 0); }
  int th(int j) const { return 2 + 3 * j; }
  int ph(int j) const { return 3 + 3 * j; }
  int t(int j) const { return 4 + 3 * j; }
  int log_d_std() const { return 2 + 3 * fibres; }
};

// Fractions from the t's and df_j/dt_k (lower triangular).
void fractions(const Layout& layout, const Eigen::VectorXd& x, std::array<double, kBallStickMaxFibres>& f,
               Eigen::Matrix3d& df_dt) {
  std::array<double, kBallStickMaxFibres> s{}, ds{};
  for (int j = 0; j < layout.fibres; ++j) {
    const double t = x(layout.t(j));
    s[static_cast<size_t>(j)] = std::sin(t) * std::sin(t);
    ds[static_cast<size_t>(j)] = std::sin(2.0 * t);
  }
  df_dt.setZero();
  for (int j = 0; j < layout.fibres; ++j) {
    const auto sj = static_cast<size_t>(j);
    double rest = 1.0;
    for (int k = 0; k < j; ++k) rest *= 1.0 - s[static_cast<size_t>(k)];
    f[sj] = s[sj] * rest;
    df_dt(j, j) = ds[sj] * rest;
    for (int k = 0; k < j; ++k) {
      double others = 1.0;
      for (int m = 0; m < j; ++m) {
        if (m != k) others *= 1.0 - s[static_cast<size_t>(m)];
      }
      df_dt(j, k) = -s[sj] * ds[static_cast<size_t>(k)] * others;
    }
  }
}

// The acquisition as arrays, and the model's signal and Jacobian evaluated on them (vectorised: Eigen's array exp).
struct Acquisition {
  Eigen::ArrayXd b, gx, gy, gz;
  explicit Acquisition(const DiffusionScheme& scheme) {
    const auto n = static_cast<Eigen::Index>(scheme.measurements());
    b.resize(n), gx.resize(n), gy.resize(n), gz.resize(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const auto si = static_cast<size_t>(i);
      b(i) = scheme.bvals[si];
      gx(i) = scheme.bvecs[si][0], gy(i) = scheme.bvecs[si][1], gz(i) = scheme.bvecs[si][2];
    }
  }
  Eigen::Index size() const { return b.size(); }
};

class Evaluator {
 public:
  Evaluator(const Acquisition& acquisition, Layout layout) : acq_(acquisition), layout_(layout) {
    const Eigen::Index n = acq_.size();
    for (Eigen::ArrayXd* a : {&ball_, &a_, &log_d_, &log_s_, &dx_, &dot_, &inner_, &sum_log_d_, &sum_log_s_}) {
      a->resize(n);
    }
    ones_ = Eigen::ArrayXd::Ones(n);
    ds_df_.resize(n, layout.fibres);
  }

  // The signal at x and, when jac is given, d signal / d x (measurements x parameters).
  void operator()(const Eigen::VectorXd& x, Eigen::VectorXd& signal, Eigen::MatrixXd* jac) {
    const bool derivatives = jac != nullptr;
    const double s0 = std::exp(x(0)), d = std::exp(x(1));
    const double s = layout_.model == 2 ? std::exp(x(layout_.log_d_std())) : 0.0;
    std::array<double, kBallStickMaxFibres> f{};
    Eigen::Matrix3d df_dt;
    fractions(layout_, x, f, df_dt);
    double fsum = 0;
    for (int j = 0; j < layout_.fibres; ++j) fsum += f[static_cast<size_t>(j)];

    compartment(ones_, d, s, derivatives);
    ball_ = a_;
    inner_ = (1.0 - fsum) * ball_;
    if (derivatives) {
      sum_log_d_ = (1.0 - fsum) * log_d_;
      sum_log_s_ = (1.0 - fsum) * log_s_;
    }
    for (int j = 0; j < layout_.fibres; ++j) {
      const double fj = f[static_cast<size_t>(j)];
      const double th = x(layout_.th(j)), ph = x(layout_.ph(j));
      const double st = std::sin(th), ct = std::cos(th), sp = std::sin(ph), cp = std::cos(ph);
      dot_ = acq_.gx * (st * cp) + acq_.gy * (st * sp) + acq_.gz * ct;
      compartment(dot_.square(), d, s, derivatives);
      inner_ += fj * a_;
      if (!derivatives) continue;
      sum_log_d_ += fj * log_d_;
      sum_log_s_ += fj * log_s_;
      const Eigen::ArrayXd common = (2.0 * s0 * fj) * dx_ * dot_;
      jac->col(layout_.th(j)) = (common * (acq_.gx * (ct * cp) + acq_.gy * (ct * sp) - acq_.gz * st)).matrix();
      jac->col(layout_.ph(j)) = (common * (acq_.gy * (st * cp) - acq_.gx * (st * sp))).matrix();
      ds_df_.col(j) = (s0 * (a_ - ball_)).matrix();
    }
    signal = (s0 * inner_).matrix();
    if (!derivatives) return;
    jac->col(0) = signal;
    jac->col(1) = (s0 * sum_log_d_).matrix();
    if (layout_.model == 2) jac->col(layout_.log_d_std()) = (s0 * sum_log_s_).matrix();
    for (int k = 0; k < layout_.fibres; ++k) {
      jac->col(layout_.t(k)) = ds_df_.rightCols(layout_.fibres - k) * df_dt.col(k).segment(k, layout_.fibres - k);
    }
  }

 private:
  // A compartment's attenuation a_ at x (= (g . v)^2, or 1 for the ball) and, with derivatives, its derivatives with
  // respect to log d, log d_std and x. Model 2 uses log1p so that it tends smoothly to model 1 as d_std -> 0.
  void compartment(const Eigen::ArrayXd& xs, double d, double s, bool derivatives) {
    if (layout_.model == 1) {
      a_ = (-d * acq_.b * xs).exp();
      if (!derivatives) return;
      log_d_ = -d * acq_.b * xs * a_;
      dx_ = -d * acq_.b * a_;
      log_s_.setZero();
      return;
    }
    const double u = d * d / (s * s);
    const Eigen::ArrayXd k = acq_.b * xs * (s * s / d);
    const Eigen::ArrayXd l = k.log1p();
    a_ = (-u * l).exp();
    if (!derivatives) return;
    const Eigen::ArrayXd bdx = d * acq_.b * xs / (1.0 + k);
    log_d_ = a_ * (-2.0 * u * l + bdx);
    log_s_ = a_ * (2.0 * u * l - 2.0 * bdx);
    dx_ = -d * a_ * acq_.b / (1.0 + k);
  }

  const Acquisition& acq_;
  Layout layout_;
  Eigen::ArrayXd ones_, ball_, a_, log_d_, log_s_, dx_, dot_, inner_, sum_log_d_, sum_log_s_;
  Eigen::MatrixXd ds_df_;
};

BallStickParams to_params(const Layout& layout, const Eigen::VectorXd& x) {
  BallStickParams p;
  p.s0 = std::exp(x(0));
  p.d = std::exp(x(1));
  p.d_std = layout.model == 2 ? std::exp(x(layout.log_d_std())) : 0.0;
  Eigen::Matrix3d unused;
  fractions(layout, x, p.f, unused);
  for (int j = 0; j < layout.fibres; ++j) {
    p.th[static_cast<size_t>(j)] = x(layout.th(j));
    p.ph[static_cast<size_t>(j)] = x(layout.ph(j));
  }
  return p;
}

// Angles of a unit vector: th in [0, pi], ph in (-pi, pi].
void to_angles(const std::array<double, 3>& v, double& th, double& ph) {
  th = std::acos(std::clamp(v[2], -1.0, 1.0));
  ph = std::atan2(v[1], v[0]);
}

// Levenberg-Marquardt on the SSE from x; returns the iterations done.
int levenberg_marquardt(const Acquisition& acquisition, const Layout& layout, const Eigen::VectorXd& y,
                        Eigen::VectorXd& x, double& sse) {
  using SmallVector = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, kMaxParams, 1>;
  using SmallMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, kMaxParams, kMaxParams>;
  const Eigen::Index n = acquisition.size();
  const int p = layout.params();
  Evaluator evaluate(acquisition, layout);
  Eigen::VectorXd signal(n), residual(n);
  Eigen::MatrixXd jac(n, p);
  Eigen::VectorXd trial(p);
  SmallMatrix normal(p, p), damped(p, p);
  SmallVector gradient(p), scale(p), step(p);
  evaluate(x, signal, nullptr);
  sse = (y - signal).squaredNorm();
  const double floor_sse = 1e-28 * y.squaredNorm();
  double lambda = 1e-3, nu = 2.0;  // Nielsen's damping update (Madsen, Nielsen & Tingleff 2004, eq. 3.16)
  int iteration = 0;
  while (iteration < kMaxIterations && sse > floor_sse) {
    ++iteration;
    evaluate(x, signal, &jac);
    residual = y - signal;
    normal.setZero();
    normal.selfadjointView<Eigen::Lower>().rankUpdate(jac.transpose());
    normal.triangularView<Eigen::StrictlyUpper>() = normal.transpose();
    gradient.noalias() = jac.transpose() * residual;
    scale = normal.diagonal();
    scale = scale.cwiseMax(1e-12 * scale.maxCoeff() + 1e-300);  // parameters the data do not see (a fibre with f = 0)
    bool accepted = false;
    double new_sse = sse;
    while (lambda < 1e12) {
      damped = normal;
      damped.diagonal() += lambda * scale;
      step = damped.ldlt().solve(gradient);
      if (step.allFinite()) {
        trial = x + step;
        evaluate(trial, signal, nullptr);
        new_sse = (y - signal).squaredNorm();
        if (std::isfinite(new_sse) && new_sse < sse) {
          // Gain ratio: actual over predicted decrease, the prediction being step' (gradient + lambda D step).
          const double predicted = step.dot(gradient + lambda * scale.cwiseProduct(step));
          const double rho = predicted > 0 ? (sse - new_sse) / predicted : 1.0;
          lambda *= std::max(1.0 / 3.0, 1.0 - std::pow(2.0 * rho - 1.0, 3));
          lambda = std::max(lambda, 1e-12);
          nu = 2.0;
          accepted = true;
          break;
        }
      }
      lambda *= nu;
      nu *= 2.0;
    }
    if (!accepted) break;
    const double relative = (sse - new_sse) / sse;
    x = trial;
    sse = new_sse;
    if (relative < kRelativeTolerance) break;
  }
  return iteration;
}

double residual_variance(const BallStickFit& fit, int measurements, int fibres, int model) {
  const int params = 2 + 3 * fibres + (model == 2 ? 1 : 0);
  return fit.sse / std::max(1, measurements - params);
}

// Mean of the finite b = 0 measurements (b <= kB0Threshold); 0 when there are none.
double mean_b0(const DiffusionScheme& scheme, const double* signal) {
  double sum = 0;
  int count = 0;
  for (int i = 0; i < scheme.measurements(); ++i) {
    if (scheme.bvals[static_cast<size_t>(i)] <= kB0Threshold && std::isfinite(signal[i])) {
      sum += signal[i];
      ++count;
    }
  }
  return count > 0 ? sum / count : 0.0;
}

BallStickParams neutral_state(double s0, int fibres, int model) {
  BallStickParams p;
  p.s0 = s0 > 0 && std::isfinite(s0) ? s0 : 1.0;
  p.d = 1e-3;
  p.d_std = model == 2 ? 5e-4 : 0.0;
  const double th[3] = {std::numbers::pi / 2, std::numbers::pi / 2, 0.0};
  const double ph[3] = {0.0, std::numbers::pi / 2, 0.0};
  for (int j = 0; j < fibres; ++j) {
    const auto sj = static_cast<size_t>(j);
    p.f[sj] = kInitMinFraction;
    p.th[sj] = th[sj];
    p.ph[sj] = ph[sj];
  }
  p.tau = 1.0 / ((0.05 * p.s0) * (0.05 * p.s0));
  return p;
}

// Model 1 with `fibres` sticks. Two starts, the lower SSE kept (fit_model1; the second only where the first collapsed
// two sticks onto each other). Direct: sticks along the tensor's
// eigenvectors e1, e2, e3 with f = 0.2 + 0.6 FA (in [0.2, 0.7]) for the first and 0.1 for the others. Nested chain
// (fibres >= 2): the direct one-stick fit, then one stick at a time, each new stick of f = 0.05 perpendicular to the
// earlier ones (along e2 made orthogonal to the first stick for the second, along the cross product of the first two
// for the third) and all parameters refitted. Explored on noiseless three-fibre voxels with a 60-degree pair (200
// random orientations): the direct start alone fails in 22 (a stick collapsing onto another), the pair in 2.
struct Model1Fit {
  Eigen::VectorXd x;
  double sse = std::numeric_limits<double>::infinity();
  int iterations = 0;
};

Model1Fit direct_fit(const Acquisition& acquisition, const Eigen::VectorXd& y, const TensorFit& tensor, int fibres) {
  const Layout layout{fibres, 1};
  Model1Fit fit;
  fit.x.resize(layout.params());
  fit.x(0) = std::log(tensor.s0);
  fit.x(1) = std::log(std::clamp(tensor.md, 2e-4, 4e-3));
  const std::array<std::array<double, 3>, 3> axes{tensor.e1, tensor.e2, tensor.e3};
  double remaining = 1.0;
  for (int j = 0; j < fibres; ++j) {
    const double f = j == 0 ? std::clamp(0.2 + 0.6 * tensor.fa, 0.2, 0.7) : 0.1;
    to_angles(axes[static_cast<size_t>(j)], fit.x(layout.th(j)), fit.x(layout.ph(j)));
    fit.x(layout.t(j)) = std::asin(std::sqrt(f / remaining));
    remaining -= f;
  }
  fit.iterations = levenberg_marquardt(acquisition, layout, y, fit.x, fit.sse);
  return fit;
}

Model1Fit nested_fit(const Acquisition& acquisition, const Eigen::VectorXd& y, const TensorFit& tensor, int fibres) {
  if (fibres == 1) return direct_fit(acquisition, y, tensor, 1);
  const Model1Fit fewer = nested_fit(acquisition, y, tensor, fibres - 1);
  const Layout layout{fibres, 1}, previous{fibres - 1, 1};
  Model1Fit fit;
  fit.x.resize(layout.params());
  fit.x.head(previous.params()) = fewer.x;
  const auto unit = [&](int j) {
    const std::array<double, 3> v = fibre_direction(fewer.x(previous.th(j)), fewer.x(previous.ph(j)));
    return Eigen::Vector3d(v[0], v[1], v[2]);
  };
  Eigen::Vector3d added;
  if (fibres == 2) {
    const Eigen::Vector3d v1 = unit(0), e2(tensor.e2[0], tensor.e2[1], tensor.e2[2]);
    added = e2 - e2.dot(v1) * v1;
  } else {
    added = unit(0).cross(unit(1));
  }
  if (added.norm() < 1e-3) added = unit(0).unitOrthogonal();
  added.normalize();
  const int j = fibres - 1;
  to_angles({added(0), added(1), added(2)}, fit.x(layout.th(j)), fit.x(layout.ph(j)));
  Eigen::Matrix3d unused;
  std::array<double, kBallStickMaxFibres> f{};
  fractions(previous, fewer.x, f, unused);
  double left = 1.0;
  for (int k = 0; k < j; ++k) left -= f[static_cast<size_t>(k)];
  fit.x(layout.t(j)) = std::asin(std::sqrt(std::clamp(0.05 / std::max(left, 1e-12), 0.0, 0.5)));
  fit.iterations = fewer.iterations + levenberg_marquardt(acquisition, layout, y, fit.x, fit.sse);
  return fit;
}

// Whether two sticks of a fit lie within 35 degrees of each other (the direct start's failure: a stick collapsing onto
// another).
bool sticks_collapsed(const Model1Fit& fit, int fibres) {
  const Layout layout{fibres, 1};
  for (int a = 0; a < fibres; ++a) {
    for (int b = a + 1; b < fibres; ++b) {
      const std::array<double, 3> u = fibre_direction(fit.x(layout.th(a)), fit.x(layout.ph(a)));
      const std::array<double, 3> v = fibre_direction(fit.x(layout.th(b)), fit.x(layout.ph(b)));
      if (std::fabs(u[0] * v[0] + u[1] * v[1] + u[2] * v[2]) > std::cos(35.0 * std::numbers::pi / 180.0)) return true;
    }
  }
  return false;
}

Model1Fit fit_model1(const Acquisition& acquisition, const Eigen::VectorXd& y, const TensorFit& tensor, int fibres) {
  Model1Fit direct = direct_fit(acquisition, y, tensor, fibres);
  // The nested start only where the direct one collapsed two sticks or did not converge to a finite fit (the second
  // start costs 2-3 times the first).
  if (fibres == 1 || (std::isfinite(direct.sse) && !sticks_collapsed(direct, fibres))) return direct;
  Model1Fit nested = nested_fit(acquisition, y, tensor, fibres);
  Model1Fit& best = nested.sse < direct.sse ? nested : direct;
  best.iterations = direct.iterations + nested.iterations;
  return best;
}

}  // namespace

TensorFit fit_tensor(const DiffusionScheme& scheme, const double* signal) {
  TensorFit fit;
  const int n = scheme.measurements();
  std::vector<int> used;
  for (int i = 0; i < n; ++i) {
    if (std::isfinite(signal[i]) && signal[i] > 0) used.push_back(i);
  }
  const auto m = static_cast<Eigen::Index>(used.size());
  if (m < 7) return fit;
  Eigen::MatrixXd x(m, 7);
  Eigen::VectorXd y(m);
  for (Eigen::Index r = 0; r < m; ++r) {
    const auto i = static_cast<size_t>(used[static_cast<size_t>(r)]);
    const double b = scheme.bvals[i];
    const std::array<double, 3>& g = scheme.bvecs[i];
    x.row(r) << 1.0, -b * g[0] * g[0], -b * g[1] * g[1], -b * g[2] * g[2], -2.0 * b * g[0] * g[1],
        -2.0 * b * g[0] * g[2], -2.0 * b * g[1] * g[2];
    y(r) = std::log(signal[i]);
  }
  Eigen::VectorXd beta;
  if (!solve_least_squares(x, y, nullptr, beta)) return fit;
  Eigen::VectorXd prediction = x * beta;
  Eigen::VectorXd w = (2.0 * (prediction.array() - prediction.maxCoeff())).exp();  // S_ols^2, scaled to max 1
  if (!solve_least_squares(x, y, &w, beta)) return fit;

  Eigen::Matrix3d tensor;
  tensor << beta(1), beta(4), beta(5), beta(4), beta(2), beta(6), beta(5), beta(6), beta(3);
  const Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> eigen(tensor);  // ascending
  const Eigen::Vector3d values = eigen.eigenvalues();
  fit.s0 = std::exp(beta(0));
  fit.md = values.mean();
  const double norm = values.norm();
  fit.fa = norm > 0 ? std::sqrt(1.5) * (values.array() - fit.md).matrix().norm() / norm : 0.0;
  std::array<std::array<double, 3>*, 3> vectors{&fit.e1, &fit.e2, &fit.e3};
  for (int k = 0; k < 3; ++k) {
    Eigen::Vector3d e = eigen.eigenvectors().col(2 - k);
    Eigen::Index largest = 0;  // signed so that the largest component is positive (the device's start does the same)
    for (Eigen::Index r = 1; r < 3; ++r) largest = std::fabs(e(r)) > std::fabs(e(largest)) ? r : largest;
    if (e(largest) < 0) e = -e;
    *vectors[static_cast<size_t>(k)] = {e(0), e(1), e(2)};
    fit.eigenvalues[static_cast<size_t>(k)] = values(2 - k);
  }
  fit.ok = std::isfinite(fit.s0) && std::isfinite(fit.md) && std::isfinite(fit.fa) && fit.s0 > 0;
  return fit;
}

BallStickFit fit_ball_stick(const DiffusionScheme& scheme, const double* signal, int fibres, int model) {
  BallStickFit fit;
  const TensorFit tensor = fit_tensor(scheme, signal);
  if (!tensor.ok) return fit;
  const Eigen::VectorXd y = Eigen::Map<const Eigen::VectorXd>(signal, scheme.measurements());
  const Acquisition acquisition(scheme);
  Model1Fit best = fit_model1(acquisition, y, tensor, fibres);
  fit.iterations = best.iterations;
  Layout layout{fibres, 1};
  if (model == 2) {
    const Layout layout2{fibres, 2};
    Eigen::VectorXd x2(layout2.params());
    x2.head(layout.params()) = best.x;
    x2(layout2.log_d_std()) = best.x(1) + std::log(0.5);
    fit.iterations += levenberg_marquardt(acquisition, layout2, y, x2, best.sse);
    layout = layout2;
    best.x = x2;
  }
  fit.sse = best.sse;
  fit.params = to_params(layout, best.x);
  fit.ok = best.x.allFinite() && std::isfinite(fit.sse);
  return fit;
}

BallStickParams mcmc_ready(const BallStickParams& fit, int fibres, int model, double residual_variance) {
  BallStickParams p = fit;
  p.d = std::clamp(p.d, kInitMinDiffusivity, kInitMaxDiffusivity);
  p.d_std = model == 2 ? std::clamp(p.d_std, kInitMinDiffusivityStd, kMaxDiffusivityStd) : 0.0;
  double sum = 0;
  for (int j = 0; j < fibres; ++j) {
    double& f = p.f[static_cast<size_t>(j)];
    f = std::clamp(f, kInitMinFraction, kInitMaxFraction);
    sum += f;
  }
  if (sum > kInitMaxFractionSum) {
    const double base = kInitMinFraction * fibres;
    const double scale = (kInitMaxFractionSum - base) / (sum - base);
    for (int j = 0; j < fibres; ++j) {
      double& f = p.f[static_cast<size_t>(j)];
      f = kInitMinFraction + (f - kInitMinFraction) * scale;
    }
  }
  std::array<int, kBallStickMaxFibres> order{0, 1, 2};
  std::stable_sort(order.begin(), order.begin() + fibres,
                   [&](int a, int b) { return p.f[static_cast<size_t>(a)] > p.f[static_cast<size_t>(b)]; });
  const BallStickParams unsorted = p;
  for (int j = 0; j < fibres; ++j) {
    const auto sj = static_cast<size_t>(j), from = static_cast<size_t>(order[sj]);
    p.f[sj] = unsorted.f[from];
    to_angles(fibre_direction(unsorted.th[from], unsorted.ph[from]), p.th[sj], p.ph[sj]);
  }
  const double variance = std::max(residual_variance, (1e-4 * p.s0) * (1e-4 * p.s0) + 1e-12);
  p.tau = 1.0 / variance;
  return p;
}

std::vector<BallStickParams> initialise_ball_stick(const DiffusionScheme& scheme, const float* data, int voxels,
                                                   int fibres, int model, std::vector<uint8_t>* fitted) {
  if (voxels < 0 || fibres < 1 || fibres > kBallStickMaxFibres || (model != 1 && model != 2) ||
      scheme.measurements() < 1 || scheme.bvecs.size() != scheme.bvals.size() || (voxels > 0 && data == nullptr)) {
    throw std::invalid_argument(
        fmt::format("initialise_ball_stick: need voxels >= 0 (got {}), 1 <= fibres <= {} (got {}), model 1 or 2 "
                    "(got {}) and a scheme with measurements (got {} b-values, {} bvecs)",
                    voxels, kBallStickMaxFibres, fibres, model, scheme.bvals.size(), scheme.bvecs.size()));
  }
  const auto n = static_cast<size_t>(scheme.measurements());
  const auto count = static_cast<size_t>(voxels);
  std::vector<BallStickParams> out(count);
  std::vector<uint8_t> ok(count, 0);
  host_ranges(count, host_thread_count(), [&](size_t begin, size_t end, size_t) {
    std::vector<double> signal(n);
    for (size_t v = begin; v < end; ++v) {
      bool finite = true, any = false;
      for (size_t i = 0; i < n; ++i) {
        signal[i] = static_cast<double>(data[v * n + i]);
        finite = finite && std::isfinite(signal[i]);
        any = any || signal[i] != 0.0;
      }
      const double b0 = mean_b0(scheme, signal.data());
      if (finite && any && b0 > 0) {
        const BallStickFit fit = fit_ball_stick(scheme, signal.data(), fibres, model);
        if (fit.ok) {
          out[v] = mcmc_ready(fit.params, fibres, model, residual_variance(fit, scheme.measurements(), fibres, model));
          ok[v] = 1;
          continue;
        }
      }
      out[v] = neutral_state(b0, fibres, model);
    }
  });
  if (fitted != nullptr) *fitted = std::move(ok);
  return out;
}

}  // namespace rtf
