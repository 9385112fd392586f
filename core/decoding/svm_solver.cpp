// Dual coordinate descent for the linear SVM (core/decoding/svm_solver.hpp): Hsieh et al. 2008, "A dual coordinate
// descent method for large-scale linear SVM" (ICML), Algorithm 3 as in liblinear (shrinking and its stopping rule),
// visiting the samples in a fixed order. Coordinate descent converges linearly, slowly at a tight tolerance, so it is
// helped by exact steps, and its own stopping rule decides when to stop: the squared hinge starts (when n >= 2d) from
// the primal minimum found by a finite Newton method (Keerthi & DeCoste 2005, JMLR 6), and every kStepGap passes the
// dual's minimum over the free variables replaces them where it lowers the dual.
#include "core/decoding/svm_solver.hpp"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace rtf {

namespace {

constexpr int kStepGap = 10;      // passes between two exact steps
constexpr int kNewtonSteps = 30;  // at most this many primal Newton steps for the squared hinge's start
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// One binary problem on the columns of `x` ([x_i; s], d x n) with y_i = +-1. Dual: min 0.5 a^T (Q + D) a - sum a,
// 0 <= a_i <= upper, Q_ij = y_i y_j x_i.x_j; hinge: upper = C, D = 0; squared hinge: upper = inf, D_ii = 1 / (2C).
// The primal weights w = sum a_i y_i x_i are kept up to date after each coordinate.
class DualProblem {
 public:
  DualProblem(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, bool squared_hinge, double c)
      : x_(x),
        y_(y),
        c_(c),
        upper_(squared_hinge ? kInfinity : c),
        diagonal_(squared_hinge ? 0.5 / c : 0.0),
        q_(x.colwise().squaredNorm().transpose().array() + diagonal_),
        alpha_(Eigen::VectorXd::Zero(x.cols())),
        weights_(Eigen::VectorXd::Zero(x.rows())),
        order_(static_cast<size_t>(x.cols())),
        active_(order_.size()) {
    std::iota(order_.begin(), order_.end(), Eigen::Index{0});
  }

  // One pass over the active samples. Shrinking: a variable at a bound whose gradient points out of the box by more
  // than the last pass's projected-gradient range leaves the active set. Stopping rule (liblinear's): the projected
  // gradient's max - min over a pass <= tolerance, the range taken with 0 in it (so that a pass whose projected
  // gradients all share one sign cannot stop); if variables were shrunk, they return and a whole pass decides. True
  // when a pass over all samples met the rule.
  bool pass(double tolerance) {
    double pg_max = 0.0, pg_min = 0.0;
    for (size_t s = 0; s < active_; ++s) {
      const Eigen::Index i = order_[s];
      const double g = y_[i] * weights_.dot(x_.col(i)) - 1.0 + diagonal_ * alpha_[i];
      double pg = g;
      if (alpha_[i] == 0.0 || alpha_[i] == upper_) {
        if (alpha_[i] == 0.0 ? g > pg_max_old_ : g < pg_min_old_) {
          std::swap(order_[s--], order_[--active_]);
          continue;
        }
        pg = alpha_[i] == 0.0 ? std::min(g, 0.0) : std::max(g, 0.0);
      }
      pg_max = std::max(pg_max, pg);
      pg_min = std::min(pg_min, pg);
      if (std::abs(pg) > 1e-12) {
        const double previous = alpha_[i];
        alpha_[i] = std::min(std::max(previous - g / q_[i], 0.0), upper_);
        weights_ += ((alpha_[i] - previous) * y_[i]) * x_.col(i);
      }
    }
    if (pg_max - pg_min <= tolerance) {
      if (active_ == order_.size()) return true;
      active_ = order_.size();
      pg_max_old_ = kInfinity;
      pg_min_old_ = -kInfinity;
      return false;
    }
    pg_max_old_ = pg_max > 0.0 ? pg_max : kInfinity;
    pg_min_old_ = pg_min < 0.0 ? pg_min : -kInfinity;
    return false;
  }

  // Squared hinge: Newton's method on the primal 0.5 |w|^2 + C sum max(0, 1 - m_i)^2, m_i = y_i x_i.w, with the
  // generalised Hessian I + 2C sum_{m_i < 1} x_i x_i^T and an exact line search (the objective is piecewise
  // quadratic), until a step leaves the set {m_i < 1} as it was (the step was then exact) or `max_steps`; then the
  // dual point a_i = 2C max(0, 1 - m_i) (the optimum's relation) and its weights.
  void primal_start(int max_steps) {
    const Eigen::Index n = x_.cols(), d = x_.rows();
    Eigen::VectorXd w = Eigen::VectorXd::Zero(d), margin = Eigen::VectorXd::Zero(n);
    for (int step = 0; step < max_steps; ++step) {
      const Eigen::Array<bool, Eigen::Dynamic, 1> below = margin.array() < 1.0;
      Eigen::MatrixXd active(d, below.count());
      for (Eigen::Index i = 0, j = 0; i < n; ++i) {
        if (below[i]) active.col(j++) = x_.col(i);
      }
      const Eigen::VectorXd slack = below.select(1.0 - margin.array(), 0.0);
      const Eigen::VectorXd gradient = w - 2.0 * c_ * (x_ * slack.cwiseProduct(y_));
      Eigen::MatrixXd hessian = Eigen::MatrixXd::Zero(d, d);
      if (active.cols() > 0) hessian.selfadjointView<Eigen::Lower>().rankUpdate(active, 2.0 * c_);  // (0: Eigen /0)
      hessian.diagonal().array() += 1.0;
      const Eigen::VectorXd p = -hessian.ldlt().solve(gradient);
      const Eigen::VectorXd dm = (x_.transpose() * p).cwiseProduct(y_);
      // phi'(t) = (w + t p).p - 2C sum max(0, 1 - m_i - t dm_i) dm_i is increasing and piecewise linear; Newton's
      // method on it from t = 0 reaches its zero in finitely many steps.
      double t = 0.0;
      for (int k = 0; k < 100; ++k) {
        double slope = w.dot(p) + t * p.squaredNorm(), curvature = p.squaredNorm();
        for (Eigen::Index i = 0; i < n; ++i) {
          const double s = 1.0 - margin[i] - t * dm[i];
          if (s > 0.0) {
            slope -= 2.0 * c_ * s * dm[i];
            curvature += 2.0 * c_ * dm[i] * dm[i];
          }
        }
        const double next = t - slope / curvature;
        if (!(std::abs(next - t) > 1e-15 * std::max(1.0, std::abs(t)))) break;
        t = next;
      }
      if (!(t > 0.0) || !std::isfinite(t)) break;
      w += t * p;
      margin += t * dm;
      if ((margin.array() < 1.0).matrix() == below.matrix()) break;
    }
    margin = (x_.transpose() * w).cwiseProduct(y_);
    alpha_ = (2.0 * c_ * (1.0 - margin.array())).cwiseMax(0.0);
    weights_ = x_ * alpha_.cwiseProduct(y_);
  }

  // The dual's minimum over the free variables F (0 < a_i < upper) with the others fixed: G_i = y_i x_i.w - 1 +
  // D_ii a_i = 0 on F; with A = [y_i x_i^T]_F and w = w_B + A^T a_F (w_B: the bounded variables' part),
  // (A A^T + D_F) a_F = 1 - A w_B. Solved as f x f (f = |F| <= d), else (squared hinge, D = delta I) through the d x d
  // (A^T A + delta I) (Woodbury), with two steps of iterative refinement; the hinge with f > d first moves in the null
  // space (null_space_moves). The candidates, the minimum projected onto the box and the step towards it cut where a
  // variable meets its bound, are kept where the dual decreases, or stays within rounding while the projected
  // gradient's range shrinks.
  void exact_step() {
    if (diagonal_ == 0.0) null_space_moves();
    const std::vector<Eigen::Index> free = free_variables();
    const Eigen::Index f = static_cast<Eigen::Index>(free.size()), d = x_.rows();
    if (f == 0 || (diagonal_ == 0.0 && f > d)) return;
    Eigen::MatrixXd a;
    Eigen::VectorXd alpha_free;
    gather(free, a, alpha_free);
    const Eigen::VectorXd v = Eigen::VectorXd::Ones(f) - a * (weights_ - a.transpose() * alpha_free);
    Eigen::MatrixXd h = Eigen::MatrixXd::Zero(std::min(f, d), std::min(f, d));
    h.selfadjointView<Eigen::Lower>().rankUpdate(f <= d ? a : Eigen::MatrixXd(a.transpose()));
    h.diagonal().array() += diagonal_;
    const Eigen::LDLT<Eigen::MatrixXd> ldlt(h);
    const auto solve = [&](const Eigen::VectorXd& rhs) -> Eigen::VectorXd {
      if (f <= d) return ldlt.solve(rhs);
      return (rhs - a * ldlt.solve(a.transpose() * rhs)) / diagonal_;
    };
    Eigen::VectorXd target = solve(v);
    for (int k = 0; k < 2; ++k) target += solve(v - a * (a.transpose() * target) - diagonal_ * target);
    if (!target.allFinite()) return;

    const double current = dual(alpha_, weights_), current_range = gradient_range(alpha_, weights_);
    const auto try_step = [&](double t) {
      Eigen::VectorXd alpha = alpha_;
      for (Eigen::Index j = 0; j < f; ++j) {
        alpha[free[j]] = std::clamp(alpha_free[j] + t * (target[j] - alpha_free[j]), 0.0, upper_);
      }
      const Eigen::VectorXd weights = x_ * alpha.cwiseProduct(y_);
      const double value = dual(alpha, weights), rounding = 1e-13 * (1.0 + std::abs(current));
      if (value < current - rounding ||
          (value <= current + rounding && gradient_range(alpha, weights) < current_range)) {
        alpha_ = alpha;
        weights_ = weights;
        return true;
      }
      return false;
    };
    if (try_step(1.0)) return;
    double t = 1.0;
    for (Eigen::Index j = 0; j < f; ++j) {
      if (target[j] < 0.0) t = std::min(t, alpha_free[j] / (alpha_free[j] - target[j]));
      if (target[j] > upper_) t = std::min(t, (upper_ - alpha_free[j]) / (target[j] - alpha_free[j]));
    }
    if (t < 1.0) try_step(t);
  }

  const Eigen::VectorXd& weights() const { return weights_; }

 private:
  // Hinge with more free variables than d: on the free variables' face the dual 0.5 |w|^2 - sum a is linear along
  // null(A^T) (w does not change there), decreasing along z = -(g - A (A^T A)^-1 A^T g), g = A w - 1 its gradient;
  // each move goes along z until a variable meets its bound (one fewer free: a rank-1 downdate of A^T A).
  void null_space_moves() {
    const Eigen::Index d = x_.rows();
    const std::vector<Eigen::Index> free = free_variables();
    const Eigen::Index f = static_cast<Eigen::Index>(free.size());
    if (f <= d) return;
    Eigen::MatrixXd a;
    Eigen::VectorXd alpha_free;
    gather(free, a, alpha_free);
    const Eigen::VectorXd g = a * weights_ - Eigen::VectorXd::Ones(f);
    Eigen::MatrixXd m = Eigen::MatrixXd::Zero(d, d);
    m.selfadjointView<Eigen::Lower>().rankUpdate(a.transpose());
    Eigen::LDLT<Eigen::MatrixXd> ldlt(m);
    Eigen::VectorXd in = Eigen::VectorXd::Ones(f);  // 1 for the variables still free
    for (Eigen::Index left = f; left > d; --left) {
      const Eigen::VectorXd gi = g.cwiseProduct(in);
      const Eigen::VectorXd z = (a * ldlt.solve(a.transpose() * gi)).cwiseProduct(in) - gi;
      if (!z.allFinite() || !(z.norm() > 1e-10 * gi.norm())) break;
      double t = kInfinity;
      Eigen::Index hit = -1;
      for (Eigen::Index j = 0; j < f; ++j) {
        if (in[j] == 0.0) continue;
        const double room = z[j] < 0.0   ? alpha_free[j] / -z[j]
                            : z[j] > 0.0 ? (upper_ - alpha_free[j]) / z[j]
                                         : kInfinity;
        if (room < t) t = room, hit = j;
      }
      if (hit < 0) break;
      alpha_free = (alpha_free + t * z).cwiseMax(0.0).cwiseMin(upper_);
      alpha_free[hit] = z[hit] < 0.0 ? 0.0 : upper_;
      in[hit] = 0.0;
      ldlt.rankUpdate(a.row(hit).transpose(), -1.0);
    }
    for (Eigen::Index j = 0; j < f; ++j) alpha_[free[j]] = alpha_free[j];
    weights_ = x_ * alpha_.cwiseProduct(y_);
  }

  std::vector<Eigen::Index> free_variables() const {
    std::vector<Eigen::Index> free;
    for (Eigen::Index i = 0; i < alpha_.size(); ++i) {
      if (alpha_[i] > 0.0 && alpha_[i] < upper_) free.push_back(i);
    }
    return free;
  }

  // A = [y_i x_i^T] (rows) and the a_i of the variables `free`.
  void gather(const std::vector<Eigen::Index>& free, Eigen::MatrixXd& a, Eigen::VectorXd& alpha_free) const {
    const Eigen::Index f = static_cast<Eigen::Index>(free.size());
    a.resize(f, x_.rows());
    alpha_free.resize(f);
    for (Eigen::Index j = 0; j < f; ++j) {
      a.row(j) = y_[free[j]] * x_.col(free[j]).transpose();
      alpha_free[j] = alpha_[free[j]];
    }
  }

  double dual(const Eigen::VectorXd& alpha, const Eigen::VectorXd& weights) const {
    return 0.5 * weights.squaredNorm() + 0.5 * diagonal_ * alpha.squaredNorm() - alpha.sum();
  }

  // The projected gradient's range over all variables, with 0 in it (the stopping rule's measure).
  double gradient_range(const Eigen::VectorXd& alpha, const Eigen::VectorXd& weights) const {
    const Eigen::VectorXd g = (x_.transpose() * weights).cwiseProduct(y_) + diagonal_ * alpha;
    double pg_max = 0.0, pg_min = 0.0;
    for (Eigen::Index i = 0; i < g.size(); ++i) {
      const double gi = g[i] - 1.0;
      const double pg = alpha[i] == 0.0 ? std::min(gi, 0.0) : alpha[i] == upper_ ? std::max(gi, 0.0) : gi;
      pg_max = std::max(pg_max, pg);
      pg_min = std::min(pg_min, pg);
    }
    return pg_max - pg_min;
  }

  const Eigen::MatrixXd& x_;
  const Eigen::VectorXd& y_;
  double c_, upper_, diagonal_;
  Eigen::VectorXd q_;  // Q_ii + D_ii
  Eigen::VectorXd alpha_, weights_;
  std::vector<Eigen::Index> order_;  // the visiting order, the active samples first
  size_t active_;                    // the number of active samples
  double pg_max_old_ = kInfinity, pg_min_old_ = -kInfinity;
};

struct DualResult {
  Eigen::VectorXd weights;  // [w; beta]
  int passes = 0;
  bool converged = false;
};

DualResult solve_dual(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, bool squared_hinge,
                      const SolverOptions& options) {
  DualProblem problem(x, y, squared_hinge, options.c);
  if (squared_hinge && x.cols() >= 2 * x.rows()) problem.primal_start(kNewtonSteps);
  DualResult result;
  while (result.passes < options.max_iterations) {
    const bool done = problem.pass(options.tolerance);
    ++result.passes;
    if (done) {
      result.converged = true;
      break;
    }
    if (result.passes % kStepGap == 0) problem.exact_step();
  }
  result.weights = problem.weights();
  return result;
}

}  // namespace

LinearFit fit_svm(const Eigen::MatrixXd& features, std::span<const int> labels, int classes, bool squared_hinge,
                  const SolverOptions& options) {
  const Eigen::Index n = features.rows(), r = features.cols();
  Eigen::MatrixXd x(r + 1, n);  // the samples [x_i; s] as columns
  x.topRows(r) = features.transpose();
  x.row(r).setConstant(options.intercept_scaling);
  const int m = classes > 2 ? classes : 1;
  LinearFit fit;
  fit.coef.resize(r, m);
  fit.intercept.resize(m);
  fit.converged = true;
  Eigen::VectorXd y(n);
  for (int k = 0; k < m; ++k) {
    const int positive = classes > 2 ? k : 1;
    for (Eigen::Index i = 0; i < n; ++i) y[i] = labels[static_cast<size_t>(i)] == positive ? 1.0 : -1.0;
    const DualResult dual = solve_dual(x, y, squared_hinge, options);
    fit.coef.col(k) = dual.weights.head(r);
    fit.intercept[k] = dual.weights[r] * options.intercept_scaling;
    fit.iterations = std::max(fit.iterations, dual.passes);
    fit.converged = fit.converged && dual.converged;
  }
  return fit;
}

}  // namespace rtf
