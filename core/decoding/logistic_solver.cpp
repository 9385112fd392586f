// Newton's method for the L2-regularised logistic regression (core/decoding/logistic_solver.hpp): the Hessian formed
// and factorised (LDLT) for small problems, truncated Newton (preconditioned CG on Hessian-vector products) for large
// ones, each step with a backtracking (Armijo) line search.
#include "core/decoding/logistic_solver.hpp"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace rtf {

namespace {

// Up to this many unknowns ((r + 1) M) the Hessian is formed and factorised; beyond it, Hessian-vector products.
constexpr Eigen::Index kDirectMaxDimension = 300;

// log(1 + e^t) without overflow.
double softplus(double t) {
  return std::max(t, 0.0) + std::log1p(std::exp(-std::abs(t)));
}

double sigmoid(double t) {
  if (t >= 0) return 1.0 / (1.0 + std::exp(-t));
  const double e = std::exp(t);
  return e / (1.0 + e);
}

// The objective over theta, the (r + 1) x M matrix [W; b] stored column by column. The multinomial's objective adds
// 0.5 (sum b)^2: the loss does not change under a common shift of b, so the added term leaves the minimiser with
// sum b = 0 unchanged and makes the Hessian positive definite (the term and its gradient vanish there).
class LogisticProblem {
 public:
  LogisticProblem(const Eigen::MatrixXd& features, std::span<const int> labels, int classes, double c)
      : multinomial_(classes > 2), m_(classes > 2 ? classes : 1), r_(features.cols()), c_(c) {
    const Eigen::Index n = features.rows();
    x_.resize(n, r_ + 1);
    x_.leftCols(r_) = features;
    x_.col(r_).setOnes();
    x_squared_ = x_.array().square();
    label_.assign(labels.begin(), labels.end());
  }

  Eigen::Index dimension() const { return (r_ + 1) * m_; }

  // The objective at theta; its gradient into `gradient`; keeps the curvature for the Hessian that follows.
  double prepare(const Eigen::VectorXd& theta, Eigen::VectorXd& gradient) {
    const auto th = as_matrix(theta);
    z_ = x_ * th;
    Eigen::MatrixXd residual(z_.rows(), m_);  // d loss / d z
    curvature_.resize(z_.rows(), m_);
    if (multinomial_) {
      softmax_rows(z_, curvature_);
      residual = curvature_;
      for (Eigen::Index i = 0; i < z_.rows(); ++i) residual(i, label_[i]) -= 1.0;
    } else {
      for (Eigen::Index i = 0; i < z_.rows(); ++i) {
        const double y = label_[i] == 1 ? 1.0 : -1.0;
        residual(i, 0) = -y * sigmoid(-y * z_(i, 0));
        curvature_(i, 0) = sigmoid(z_(i, 0)) * sigmoid(-z_(i, 0));
      }
    }
    Eigen::MatrixXd g = c_ * (x_.transpose() * residual);
    add_penalty(th, g);
    gradient = Eigen::Map<const Eigen::VectorXd>(g.data(), g.size());
    return objective(z_, th);
  }

  // The objective at theta + t step, from the products x theta (of the last prepare) and x step (set_direction).
  void set_direction(const Eigen::VectorXd& step) { z_step_ = x_ * as_matrix(step); }
  double value_along(const Eigen::VectorXd& theta, const Eigen::VectorXd& step, double t) const {
    const Eigen::VectorXd trial = theta + t * step;
    return objective(z_ + t * z_step_, as_matrix(trial));
  }

  Eigen::VectorXd hessian_times(const Eigen::VectorXd& v) const {
    const auto vm = as_matrix(v);
    Eigen::MatrixXd t = x_ * vm;
    if (multinomial_) {
      const Eigen::VectorXd mean = (curvature_.array() * t.array()).rowwise().sum();
      t = c_ * (curvature_.array() * (t.colwise() - mean).array());
    } else {
      t = c_ * (curvature_.array() * t.array());
    }
    Eigen::MatrixXd hv = x_.transpose() * t;
    add_penalty(vm, hv);
    return Eigen::Map<const Eigen::VectorXd>(hv.data(), hv.size());
  }

  // The Hessian's lower triangle (what LDLT reads).
  Eigen::MatrixXd hessian() const {
    const Eigen::Index q = r_ + 1;
    Eigen::MatrixXd h = Eigen::MatrixXd::Zero(dimension(), dimension());
    if (multinomial_) {
      for (Eigen::Index k = 0; k < m_; ++k) {
        for (Eigen::Index l = k; l < m_; ++l) {
          Eigen::VectorXd weight = -c_ * curvature_.col(k).cwiseProduct(curvature_.col(l));
          if (k == l) weight += c_ * curvature_.col(k);
          h.block(l * q, k * q, q, q).noalias() = x_.transpose() * (weight.asDiagonal() * x_);
          h(l * q + r_, k * q + r_) += 1.0;  // the term 0.5 (sum b)^2
        }
      }
    } else {
      const Eigen::MatrixXd a = (c_ * curvature_.col(0)).cwiseSqrt().asDiagonal() * x_;
      h.selfadjointView<Eigen::Lower>().rankUpdate(a.transpose());
    }
    for (Eigen::Index k = 0; k < m_; ++k) h.diagonal().segment(k * q, r_).array() += 1.0;
    return h;
  }

  Eigen::VectorXd hessian_diagonal() const {
    Eigen::MatrixXd weight = c_ * curvature_;
    if (multinomial_) weight = weight.cwiseProduct((1.0 - curvature_.array()).matrix());
    Eigen::MatrixXd d = x_squared_.transpose() * weight;
    d.topRows(r_).array() += 1.0;
    if (multinomial_) d.row(r_).array() += 1.0;
    return Eigen::Map<const Eigen::VectorXd>(d.data(), d.size());
  }

  // theta -> coef (r x M) and intercept (M), the multinomial's intercepts centred.
  void unpack(const Eigen::VectorXd& theta, LinearFit& fit) const {
    const auto th = as_matrix(theta);
    fit.coef = th.topRows(r_);
    fit.intercept = th.row(r_).transpose();
    if (multinomial_) fit.intercept.array() -= fit.intercept.mean();
  }

 private:
  Eigen::Map<const Eigen::MatrixXd> as_matrix(const Eigen::VectorXd& v) const { return {v.data(), r_ + 1, m_}; }

  template <typename Theta>
  void add_penalty(const Theta& th, Eigen::MatrixXd& g) const {
    g.topRows(r_) += th.topRows(r_);
    if (multinomial_) g.row(r_).array() += th.row(r_).sum();
  }

  static void softmax_rows(const Eigen::MatrixXd& z, Eigen::MatrixXd& p) {
    p = (z.colwise() - z.rowwise().maxCoeff()).array().exp();
    p.array().colwise() /= p.rowwise().sum().array();
  }

  double objective(const Eigen::MatrixXd& z, const Eigen::Map<const Eigen::MatrixXd>& th) const {
    double penalty = 0.5 * th.topRows(r_).squaredNorm();
    double loss = 0.0;
    if (multinomial_) {
      penalty += 0.5 * th.row(r_).sum() * th.row(r_).sum();
      for (Eigen::Index i = 0; i < z.rows(); ++i) {
        const double top = z.row(i).maxCoeff();
        loss += top + std::log((z.row(i).array() - top).exp().sum()) - z(i, label_[i]);  // log-sum-exp
      }
    } else {
      for (Eigen::Index i = 0; i < z.rows(); ++i) loss += softplus(label_[i] == 1 ? -z(i, 0) : z(i, 0));
    }
    return penalty + c_ * loss;
  }

  bool multinomial_;
  Eigen::Index m_, r_;
  double c_;
  Eigen::MatrixXd x_, x_squared_;  // n x (r + 1): the features and a column of ones; its squares
  std::vector<int> label_;
  Eigen::MatrixXd z_, z_step_;  // x theta at the last prepare; x step
  Eigen::MatrixXd curvature_;   // binary: sigmoid(z) sigmoid(-z); multinomial: the probabilities
};

// Truncated Newton: preconditioned (Jacobi) CG on H s = -g, stopped at |residual| <= forcing |g|.
Eigen::VectorXd truncated_newton_step(const LogisticProblem& problem, const Eigen::VectorXd& gradient, double forcing) {
  const Eigen::VectorXd inverse_diagonal =
      problem.hessian_diagonal().cwiseMax(std::numeric_limits<double>::min()).cwiseInverse();
  Eigen::VectorXd step = Eigen::VectorXd::Zero(gradient.size());
  Eigen::VectorXd residual = -gradient;
  Eigen::VectorXd z = inverse_diagonal.cwiseProduct(residual);
  Eigen::VectorXd direction = z;
  double rz = residual.dot(z);
  const double target = forcing * gradient.norm();
  const Eigen::Index max_steps = 2 * gradient.size() + 20;
  for (Eigen::Index k = 0; k < max_steps && residual.norm() > target; ++k) {
    const Eigen::VectorXd hd = problem.hessian_times(direction);
    const double curvature = direction.dot(hd);
    if (!(curvature > 0)) break;
    const double a = rz / curvature;
    step += a * direction;
    residual -= a * hd;
    z = inverse_diagonal.cwiseProduct(residual);
    const double rz_next = residual.dot(z);
    direction = z + (rz_next / rz) * direction;
    rz = rz_next;
  }
  if (step.isZero(0.0)) step = inverse_diagonal.cwiseProduct(-gradient);
  return step;
}

// Backtracking from the full step: Armijo's sufficient decrease; where the predicted decrease is at the objective's
// rounding (near the minimum), a decrease of the gradient's max-norm instead. False when no step was accepted.
bool line_search(LogisticProblem& problem, Eigen::VectorXd& theta, const Eigen::VectorXd& step, double value,
                 double slope, double gradient_max) {
  const bool at_rounding = -slope <= 1e-12 * std::max(1.0, std::abs(value));
  if (!at_rounding) problem.set_direction(step);
  double t = 1.0;
  for (int k = 0; k < 60; ++k, t *= 0.5) {
    if (at_rounding) {
      const Eigen::VectorXd trial = theta + t * step;
      Eigen::VectorXd g;
      problem.prepare(trial, g);
      if (g.lpNorm<Eigen::Infinity>() < gradient_max) {
        theta = trial;
        return true;
      }
    } else if (problem.value_along(theta, step, t) <= value + 1e-4 * t * slope) {
      theta += t * step;
      return true;
    }
  }
  return false;
}

}  // namespace

LinearFit fit_logistic(const Eigen::MatrixXd& features, std::span<const int> labels, int classes,
                       const SolverOptions& options) {
  LogisticProblem problem(features, labels, classes, options.c);
  const Eigen::Index d = problem.dimension();
  // Stopping rule: the max-norm of the objective's gradient <= tolerance * max(1, C n) (the loss term's gradient is a
  // sum of n terms of weight C), or max_iterations Newton steps (converged = false).
  const double threshold = options.tolerance * std::max(1.0, options.c * static_cast<double>(features.rows()));
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(d), gradient(d), step(d);
  LinearFit fit;
  double first_norm = 0.0;
  for (;;) {
    const double value = problem.prepare(theta, gradient);
    const double gradient_max = gradient.lpNorm<Eigen::Infinity>();
    if (gradient_max <= threshold) {
      fit.converged = true;
      break;
    }
    if (fit.iterations >= options.max_iterations) break;
    if (d <= kDirectMaxDimension) {
      step = problem.hessian().ldlt().solve(-gradient);
    } else {
      if (fit.iterations == 0) first_norm = gradient.norm();
      step = truncated_newton_step(problem, gradient, std::min(0.5, std::sqrt(gradient.norm() / first_norm)));
    }
    double slope = gradient.dot(step);
    if (!(slope < 0)) {  // not a descent direction (a failed factorisation): steepest descent
      step = -gradient;
      slope = -gradient.squaredNorm();
    }
    if (!line_search(problem, theta, step, value, slope, gradient_max)) break;
    ++fit.iterations;
  }
  problem.unpack(theta, fit);
  return fit;
}

}  // namespace rtf
