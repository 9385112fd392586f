// The linear decoders' training (core/decoding/linear_model.hpp): optimality of every model's fit checked from the
// objectives' formulas written here (gradients, the hinge's KKT conditions), for 2-4 classes, overlapping and separable
// data, small and large C; known answers; the reduced space F = U S gives the voxels' decisions; one-vs-rest, label
// flips, ties, probabilities, names and invalid input.
// ctest-label: unit
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/decoding/linear_model.hpp"

namespace rtf {
namespace {

constexpr DecoderModel kModels[] = {DecoderModel::kLogistic, DecoderModel::kSvmSquaredHinge, DecoderModel::kSvmHinge,
                                    DecoderModel::kRidge};

struct Problem {
  Eigen::MatrixXd x;
  std::vector<int> labels;
  int classes = 2;
};

// n samples of r features: class means drawn with sd `separation` per feature plus unit noise, scaled by `scale`;
// labels cycle through the classes (all present), then shuffled.
Problem make_problem(uint64_t seed, int n, int r, int classes, double separation, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  Eigen::MatrixXd means(classes, r);
  for (int k = 0; k < classes; ++k) {
    for (int j = 0; j < r; ++j) means(k, j) = separation * normal(rng);
  }
  Problem p;
  p.classes = classes;
  p.labels.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) p.labels[static_cast<size_t>(i)] = i % classes;
  std::shuffle(p.labels.begin(), p.labels.end(), rng);
  p.x.resize(n, r);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < r; ++j) p.x(i, j) = scale * (means(p.labels[static_cast<size_t>(i)], j) + normal(rng));
  }
  return p;
}

SolverOptions options_with(DecoderModel model, double c, double intercept_scaling = 1.0) {
  SolverOptions o;
  if (model == DecoderModel::kRidge) {
    o.alpha = c;
  } else {
    o.c = c;
  }
  o.intercept_scaling = intercept_scaling;
  return o;
}

double sigmoid(double t) {
  return t >= 0 ? 1.0 / (1.0 + std::exp(-t)) : std::exp(t) / (1.0 + std::exp(t));
}

// +-1 targets of the binary problem "class `positive` against the rest".
Eigen::VectorXd signs(const std::vector<int>& labels, int positive) {
  Eigen::VectorXd y(static_cast<Eigen::Index>(labels.size()));
  for (size_t i = 0; i < labels.size(); ++i) y[static_cast<Eigen::Index>(i)] = labels[i] == positive ? 1.0 : -1.0;
  return y;
}

// The max-norm of the gradient of C sum log-loss + |W|^2 / 2 (intercepts free) at the fit.
double logistic_gradient(const Problem& p, const LinearFit& fit, double c) {
  const Eigen::MatrixXd z = decision_values(fit, p.x);
  const Eigen::Index n = p.x.rows();
  Eigen::MatrixXd residual(n, z.cols());  // d loss / d z
  for (Eigen::Index i = 0; i < n; ++i) {
    const int label = p.labels[static_cast<size_t>(i)];
    if (z.cols() == 1) {
      residual(i, 0) = sigmoid(z(i, 0)) - (label == 1 ? 1.0 : 0.0);
    } else {
      const double top = z.row(i).maxCoeff();
      const Eigen::RowVectorXd e = (z.row(i).array() - top).exp();
      residual.row(i) = e / e.sum();
      residual(i, label) -= 1.0;
    }
  }
  const Eigen::MatrixXd g_w = fit.coef + c * p.x.transpose() * residual;
  const Eigen::VectorXd g_b = c * residual.colwise().sum().transpose();
  return std::max(g_w.lpNorm<Eigen::Infinity>(), g_b.lpNorm<Eigen::Infinity>());
}

// The SVM's augmented samples [x_i, s] (rows) and weights [w; b / s] of decision function k.
Eigen::MatrixXd augmented(const Eigen::MatrixXd& x, double s) {
  Eigen::MatrixXd a(x.rows(), x.cols() + 1);
  a << x, Eigen::VectorXd::Constant(x.rows(), s);
  return a;
}
Eigen::VectorXd augmented_weights(const LinearFit& fit, int k, double s) {
  Eigen::VectorXd w(fit.coef.rows() + 1);
  w << fit.coef.col(k), fit.intercept[k] / s;
  return w;
}

// The max-norm of the gradient of |[w, beta]|^2 / 2 + C sum max(0, 1 - y f)^2 for decision function k.
double squared_hinge_gradient(const Problem& p, const LinearFit& fit, int k, double c, double s) {
  const Eigen::MatrixXd a = augmented(p.x, s);
  const Eigen::VectorXd w = augmented_weights(fit, k, s);
  const Eigen::VectorXd y = signs(p.labels, p.classes > 2 ? k : 1);
  const Eigen::VectorXd margin = (a * w).cwiseProduct(y);
  const Eigen::VectorXd slack = (1.0 - margin.array()).cwiseMax(0.0);
  return (w - 2.0 * c * a.transpose() * slack.cwiseProduct(y)).lpNorm<Eigen::Infinity>();
}

// The hinge's KKT conditions for decision function k: with a_i = y_i [x_i, s] and margins m_i, the primal optimum
// satisfies w = C sum_{m_i < 1} a_i + sum_{m_i = 1} l_i a_i with 0 <= l_i <= C. Samples within `band` of the margin
// count as on it; l from least squares. Returns the residual's max-norm; `l_min`, `l_max` the range of l.
double hinge_kkt_residual(const Problem& p, const LinearFit& fit, int k, double c, double s, double band, double& l_min,
                          double& l_max) {
  const Eigen::MatrixXd x = augmented(p.x, s);
  const Eigen::VectorXd w = augmented_weights(fit, k, s);
  const Eigen::VectorXd y = signs(p.labels, p.classes > 2 ? k : 1);
  const Eigen::VectorXd margin = (x * w).cwiseProduct(y);
  Eigen::VectorXd rest = w;
  std::vector<Eigen::Index> on;
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    if (std::abs(margin[i] - 1.0) <= band) {
      on.push_back(i);
    } else if (margin[i] < 1.0) {
      rest -= c * y[i] * x.row(i).transpose();
    }
  }
  l_min = 0.0;
  l_max = 0.0;
  if (on.empty()) return rest.lpNorm<Eigen::Infinity>();
  Eigen::MatrixXd a(x.cols(), static_cast<Eigen::Index>(on.size()));
  for (size_t j = 0; j < on.size(); ++j) a.col(static_cast<Eigen::Index>(j)) = y[on[j]] * x.row(on[j]).transpose();
  const Eigen::VectorXd l = a.colPivHouseholderQr().solve(rest);
  l_min = l.minCoeff();
  l_max = l.maxCoeff();
  return (a * l - rest).lpNorm<Eigen::Infinity>();
}

// The max-norm of the gradient of |Y - X W - 1 b^T|^2 + alpha |W|^2 (targets +-1), relative to the scale of its terms.
double ridge_gradient(const Problem& p, const LinearFit& fit, double alpha) {
  const Eigen::Index m = fit.coef.cols();
  Eigen::MatrixXd y(p.x.rows(), m);
  for (Eigen::Index k = 0; k < m; ++k) y.col(k) = signs(p.labels, p.classes > 2 ? static_cast<int>(k) : 1);
  const Eigen::MatrixXd residual = y - decision_values(fit, p.x);
  const Eigen::MatrixXd g_w = -2.0 * p.x.transpose() * residual + 2.0 * alpha * fit.coef;
  const Eigen::VectorXd g_b = -2.0 * residual.colwise().sum().transpose();
  const double scale =
      (p.x.rows() * p.x.array().square().maxCoeff() + alpha) * std::max(1.0, fit.coef.lpNorm<Eigen::Infinity>()) +
      p.x.rows() * std::max(1.0, p.x.lpNorm<Eigen::Infinity>());
  return std::max(g_w.lpNorm<Eigen::Infinity>(), g_b.lpNorm<Eigen::Infinity>()) / scale;
}

// Checks that `fit` minimises the model's objective on `p`.
void expect_optimal(DecoderModel model, const Problem& p, const LinearFit& fit, double c, double s,
                    const std::string& what) {
  const double n = static_cast<double>(p.x.rows());
  const Eigen::Index m = p.classes > 2 ? p.classes : 1;
  ASSERT_EQ(fit.coef.rows(), p.x.cols()) << what;
  ASSERT_EQ(fit.coef.cols(), m) << what;
  ASSERT_EQ(fit.intercept.size(), m) << what;
  EXPECT_TRUE(fit.converged) << what << " after " << fit.iterations;
  EXPECT_TRUE(fit.coef.allFinite() && fit.intercept.allFinite()) << what;
  const double x_max = std::max(1.0, augmented(p.x, s).rowwise().norm().maxCoeff());
  switch (model) {
    case DecoderModel::kLogistic:
      // The solver stops at max |gradient| <= 1e-10 max(1, C n); recomputed here the gradient differs by rounding,
      // O(1e-16 C n |x|): 1e-9 max(1, C n) leaves a factor 10.
      EXPECT_LE(logistic_gradient(p, fit, c), 1e-9 * std::max(1.0, c * n)) << what;
      if (m > 1) {  // centred intercepts, to rounding
        EXPECT_LE(std::abs(fit.intercept.sum()), 1e-12 * m * std::max(1.0, fit.intercept.cwiseAbs().maxCoeff()))
            << what;
      }
      break;
    case DecoderModel::kSvmSquaredHinge:
      // The dual's projected gradients within 1e-10 bound the primal gradient by 2e-10 C n max|[x, s]|; 1e-8 leaves a
      // factor 50 for the incremental w's rounding.
      for (int k = 0; k < m; ++k) {
        EXPECT_LE(squared_hinge_gradient(p, fit, k, c, s), 1e-8 * std::max(1.0, c * n * x_max)) << what << " k " << k;
      }
      break;
    case DecoderModel::kSvmHinge:
      // Samples on the margin have |m - 1| <= 1e-10 (the dual's projected gradient), others lie ~1e-3 or more away
      // in random data: a band of 1e-6 separates them. The residual is rounding (1e-10 of C n max|x|, with a factor
      // 100); l within [0, C] up to 1e-6 C (least squares on the margin samples, conditioned by their spread).
      for (int k = 0; k < m; ++k) {
        double l_min = 0.0, l_max = 0.0;
        const double residual = hinge_kkt_residual(p, fit, k, c, s, 1e-6, l_min, l_max);
        EXPECT_LE(residual, 1e-8 * std::max(1.0, c * n * x_max)) << what << " k " << k;
        EXPECT_GE(l_min, -1e-6 * c) << what << " k " << k;
        EXPECT_LE(l_max, c * (1.0 + 1e-6)) << what << " k " << k;
      }
      break;
    case DecoderModel::kRidge:
      // A backward-stable LDLT of the normal equations: a residual of a few 1e-16 of its terms' scale; 1e-11.
      EXPECT_LE(ridge_gradient(p, fit, c), 1e-11) << what;
      break;
  }
}

// The primal objective the model minimises, computed here (for the perturbation check).
double objective(DecoderModel model, const Problem& p, const LinearFit& fit, double c, double s) {
  const Eigen::MatrixXd z = decision_values(fit, p.x);
  double value = 0.0;
  for (Eigen::Index k = 0; k < z.cols(); ++k) {
    const Eigen::VectorXd y = signs(p.labels, p.classes > 2 ? static_cast<int>(k) : 1);
    for (Eigen::Index i = 0; i < z.rows(); ++i) {
      const double margin = y[i] * z(i, k), slack = std::max(0.0, 1.0 - margin);
      if (model == DecoderModel::kSvmSquaredHinge) value += c * slack * slack;
      if (model == DecoderModel::kSvmHinge) value += c * slack;
      if (model == DecoderModel::kRidge) value += (y[i] - z(i, k)) * (y[i] - z(i, k));
      if (model == DecoderModel::kLogistic && z.cols() == 1) {
        value += c * (std::max(-margin, 0.0) + std::log1p(std::exp(-std::abs(margin))));
      }
    }
    if (model == DecoderModel::kSvmHinge || model == DecoderModel::kSvmSquaredHinge) {
      value += 0.5 * (fit.coef.col(k).squaredNorm() + std::pow(fit.intercept[k] / s, 2));
    }
  }
  if (model == DecoderModel::kRidge) value += c * fit.coef.squaredNorm();
  if (model == DecoderModel::kLogistic) {
    value += 0.5 * fit.coef.squaredNorm();
    if (z.cols() > 1) {
      for (Eigen::Index i = 0; i < z.rows(); ++i) {
        const double top = z.row(i).maxCoeff();
        value += c * (top + std::log((z.row(i).array() - top).exp().sum()) - z(i, p.labels[static_cast<size_t>(i)]));
      }
    }
  }
  return value;
}

TEST(LinearModels, FitsAreOptimalForEveryModelClassCountAndC) {
  // Odd shapes: r < n (the voxels), r > n, and sizes that take the logistic solver's truncated Newton path
  // ((r + 1) M > 300: r = 310 binary, r = 80 with 4 classes) besides its factorised Hessian.
  struct Shape {
    int n, r;
  };
  const Shape shapes[] = {{57, 9}, {31, 45}, {83, 80}};
  uint64_t seed = 1000;
  for (const DecoderModel model : kModels) {
    for (const int classes : {2, 3, 4}) {
      for (const Shape shape : shapes) {
        for (const double separation : {0.3, 3.0}) {  // overlapping, separable
          for (const double c : {1e-3, 1.0, 1e3}) {
            const Problem p = make_problem(++seed, shape.n, shape.r, classes, separation);
            const double s = seed % 2 ? 1.0 : 2.5;
            const LinearFit fit = fit_linear_model(model, p.x, p.labels, classes, options_with(model, c, s));
            expect_optimal(model, p, fit, c, s,
                           decoder_model_name(model) + " K " + std::to_string(classes) + " n " +
                               std::to_string(shape.n) + " r " + std::to_string(shape.r) + " sep " +
                               std::to_string(separation) + " C " + std::to_string(c));
          }
        }
      }
    }
  }
  // The truncated Newton path of the binary model.
  const Problem wide = make_problem(77, 150, 310, 2, 0.3);
  expect_optimal(
      DecoderModel::kLogistic, wide,
      fit_linear_model(DecoderModel::kLogistic, wide.x, wide.labels, 2, options_with(DecoderModel::kLogistic, 1.0)),
      1.0, 1.0, "logistic wide binary");
}

TEST(LinearModels, NoNearbyPointHasALowerObjective) {
  // Convex objectives: the fit's objective must not exceed the objective at any perturbed point (within its rounding,
  // 1e-12 relative). Steps of 1e-3 in random directions over all weights and intercepts.
  std::mt19937_64 rng(4242);
  std::normal_distribution<double> normal;
  for (const DecoderModel model : kModels) {
    for (const int classes : {2, 3}) {
      const Problem p = make_problem(500 + static_cast<uint64_t>(classes), 41, 7, classes, 0.8);
      const double c = 2.0, s = 1.5;
      const LinearFit fit = fit_linear_model(model, p.x, p.labels, classes, options_with(model, c, s));
      const double best = objective(model, p, fit, c, s);
      for (int trial = 0; trial < 40; ++trial) {
        LinearFit moved = fit;
        for (Eigen::Index i = 0; i < moved.coef.size(); ++i) moved.coef.data()[i] += 1e-3 * normal(rng);
        for (Eigen::Index i = 0; i < moved.intercept.size(); ++i) moved.intercept[i] += 1e-3 * normal(rng);
        EXPECT_GE(objective(model, p, moved, c, s), best - 1e-12 * std::abs(best)) << decoder_model_name(model);
      }
    }
  }
}

TEST(LinearModels, KnownAnswersOnTwoPoints) {
  // x = -1 (class 0) and x = +1 (class 1): symmetric, so the intercept is 0 and w solves a scalar equation.
  const Eigen::MatrixXd x = (Eigen::MatrixXd(2, 1) << -1.0, 1.0).finished();
  const std::vector<int> labels{0, 1};
  // Logistic, C = 1: w = 2 C sigmoid(-w), by bisection.
  double lo = 0.0, hi = 2.0;
  for (int k = 0; k < 200; ++k) ((0.5 * (lo + hi) - 2.0 * sigmoid(-0.5 * (lo + hi)) < 0) ? lo : hi) = 0.5 * (lo + hi);
  const LinearFit logistic = fit_linear_model(DecoderModel::kLogistic, x, labels, 2, SolverOptions{});
  EXPECT_NEAR(logistic.coef(0, 0), 0.5 * (lo + hi), 1e-12);  // bisection to 1e-60; the fit's gradient <= 2e-10
  EXPECT_NEAR(logistic.intercept[0], 0.0, 1e-12);
  // Hinge: the hard margin w = 1, b = 0 once C >= 1/2 (alpha = 1/2 each); below, alpha = C and w = 2C.
  for (const double c : {1.0, 0.25}) {
    const LinearFit hinge =
        fit_linear_model(DecoderModel::kSvmHinge, x, labels, 2, options_with(DecoderModel::kSvmHinge, c));
    EXPECT_NEAR(hinge.coef(0, 0), std::min(1.0, 2.0 * c), 1e-10) << c;
    EXPECT_NEAR(hinge.intercept[0], 0.0, 1e-10) << c;
  }
  // Squared hinge: 0.5 w^2 + 2C (1 - w)^2, w = 4C / (1 + 4C).
  const LinearFit squared = fit_linear_model(DecoderModel::kSvmSquaredHinge, x, labels, 2, SolverOptions{});
  EXPECT_NEAR(squared.coef(0, 0), 0.8, 1e-10);
  EXPECT_NEAR(squared.intercept[0], 0.0, 1e-10);
  // Ridge, alpha = 0.5: w = sum x y / (sum x^2 + alpha) = 2 / 2.5, b = 0.
  const LinearFit ridge = fit_linear_model(DecoderModel::kRidge, x, labels, 2, options_with(DecoderModel::kRidge, 0.5));
  EXPECT_NEAR(ridge.coef(0, 0), 0.8, 1e-14);
  EXPECT_NEAR(ridge.intercept[0], 0.0, 1e-14);
  EXPECT_EQ(ridge.iterations, 1);
  EXPECT_TRUE(ridge.converged);
}

TEST(LinearModels, ReducedSpaceGivesTheSameDecisions) {
  // p > n: fitting on the voxels X (n x p) and on F = U S (K = X X^T = U S^2 U^T, eigenvalues > 1e-12 of the largest
  // kept) is the same model, an L2 penalty keeping w in the span of the training samples; test samples map to
  // K_test,train U S^-1. Tolerance 1e-6 of max(1, |d|): both fits stop at gradients of 1e-10 max(1, C n) with
  // curvature >= 1 (weights within ~1e-8), the eigendecomposition adds ~1e-13.
  const int n = 37, n_test = 13, p = 150;
  uint64_t seed = 9000;
  for (const int classes : {2, 3, 4}) {
    const Problem all = make_problem(++seed, n + n_test, p, classes, 0.25);
    Problem train{all.x.topRows(n), std::vector<int>(all.labels.begin(), all.labels.begin() + n), classes};
    for (int k = 0; k < classes; ++k) train.labels[static_cast<size_t>(k)] = k;  // every class in the training set
    const Eigen::MatrixXd test = all.x.bottomRows(n_test);
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(train.x * train.x.transpose());
    const Eigen::VectorXd lambda = eigen.eigenvalues();
    std::vector<Eigen::Index> kept;
    for (Eigen::Index i = 0; i < lambda.size(); ++i) {
      if (lambda[i] > 1e-12 * lambda.maxCoeff()) kept.push_back(i);
    }
    Eigen::MatrixXd u(n, static_cast<Eigen::Index>(kept.size()));
    Eigen::VectorXd sv(u.cols());
    for (size_t j = 0; j < kept.size(); ++j) {
      u.col(static_cast<Eigen::Index>(j)) = eigen.eigenvectors().col(kept[j]);
      sv[static_cast<Eigen::Index>(j)] = std::sqrt(lambda[kept[j]]);
    }
    const Eigen::MatrixXd f = u * sv.asDiagonal();
    const Eigen::MatrixXd f_test = (test * train.x.transpose()) * u * sv.cwiseInverse().asDiagonal();
    for (const DecoderModel model : kModels) {
      for (const double c : {0.05, 3.0}) {
        const SolverOptions o = options_with(model, c, 1.7);
        const LinearFit voxels = fit_linear_model(model, train.x, train.labels, classes, o);
        const LinearFit reduced = fit_linear_model(model, f, train.labels, classes, o);
        ASSERT_TRUE(voxels.converged && reduced.converged) << decoder_model_name(model);
        const Eigen::MatrixXd d_voxels = decision_values(voxels, test), d_reduced = decision_values(reduced, f_test);
        const double scale = std::max(1.0, d_voxels.lpNorm<Eigen::Infinity>());
        EXPECT_LE((d_voxels - d_reduced).lpNorm<Eigen::Infinity>(), 1e-6 * scale)
            << decoder_model_name(model) << " K " << classes << " C " << c;
        EXPECT_LE((voxels.intercept - reduced.intercept).lpNorm<Eigen::Infinity>(), 1e-6 * scale)
            << decoder_model_name(model) << " K " << classes << " C " << c;
      }
    }
  }
}

TEST(LinearModels, OneVersusRestColumnsAreTheBinaryFits) {
  // SVM and ridge with K classes: column k is the binary fit of class k (as class 1) against the rest. 1e-7: two
  // fits within their tolerances (identical for ridge up to rounding).
  const Problem p = make_problem(31337, 53, 6, 4, 0.7);
  for (const DecoderModel model : {DecoderModel::kSvmSquaredHinge, DecoderModel::kSvmHinge, DecoderModel::kRidge}) {
    const SolverOptions o = options_with(model, 0.8, 2.0);
    const LinearFit multi = fit_linear_model(model, p.x, p.labels, 4, o);
    for (int k = 0; k < 4; ++k) {
      std::vector<int> binary(p.labels.size());
      for (size_t i = 0; i < binary.size(); ++i) binary[i] = p.labels[i] == k ? 1 : 0;
      const LinearFit one = fit_linear_model(model, p.x, binary, 2, o);
      EXPECT_LE((one.coef.col(0) - multi.coef.col(k)).lpNorm<Eigen::Infinity>(), 1e-7) << decoder_model_name(model);
      EXPECT_NEAR(one.intercept[0], multi.intercept[k], 1e-7) << decoder_model_name(model);
    }
  }
}

TEST(LinearModels, FlippedLabelsNegateABinaryFitAndFitsAreDeterministic) {
  // Every objective is symmetric under y -> -y, (w, b) -> -(w, b); 1e-7 for two fits within their tolerances.
  const Problem p = make_problem(2718, 47, 5, 2, 0.6);
  std::vector<int> flipped(p.labels.size());
  for (size_t i = 0; i < flipped.size(); ++i) flipped[i] = 1 - p.labels[i];
  for (const DecoderModel model : kModels) {
    const SolverOptions o = options_with(model, 1.3);
    const LinearFit fit = fit_linear_model(model, p.x, p.labels, 2, o);
    const LinearFit other = fit_linear_model(model, p.x, flipped, 2, o);
    EXPECT_LE((fit.coef + other.coef).lpNorm<Eigen::Infinity>(), 1e-7) << decoder_model_name(model);
    EXPECT_NEAR(fit.intercept[0], -other.intercept[0], 1e-7) << decoder_model_name(model);
    const LinearFit again = fit_linear_model(model, p.x, p.labels, 2, o);
    EXPECT_EQ(again.coef, fit.coef) << decoder_model_name(model);  // bit for bit
    EXPECT_EQ(again.intercept, fit.intercept) << decoder_model_name(model);
    EXPECT_EQ(again.iterations, fit.iterations);
  }
}

TEST(LinearModels, TwoClassesGiveOneDecisionFunctionAndMultinomialInterceptsSumToZero) {
  for (const DecoderModel model : kModels) {
    const Problem p = make_problem(606, 40, 4, 2, 1.0);
    const LinearFit fit = fit_linear_model(model, p.x, p.labels, 2, options_with(model, 1.0));
    EXPECT_EQ(fit.coef.cols(), 1) << decoder_model_name(model);
    EXPECT_EQ(fit.intercept.size(), 1) << decoder_model_name(model);
  }
  for (const int classes : {3, 4, 5}) {
    // Shifted classes so that the free intercepts are far from 0; their sum is 0 to rounding (1e-12 of the largest).
    Problem p = make_problem(700 + static_cast<uint64_t>(classes), 61, 5, classes, 1.0);
    p.x.array() += 4.0;
    const LinearFit fit = fit_linear_model(DecoderModel::kLogistic, p.x, p.labels, classes, SolverOptions{});
    ASSERT_EQ(fit.intercept.size(), classes);
    EXPECT_LE(std::abs(fit.intercept.sum()), 1e-12 * classes * std::max(1.0, fit.intercept.cwiseAbs().maxCoeff()));
    EXPECT_GT(fit.intercept.cwiseAbs().maxCoeff(), 1e-3);  // not trivially zero
  }
}

TEST(LinearModels, LargeScaleFeaturesConverge) {
  // Features of scale 100 (unnormalised signal): the stopping rules still hold, the checks scale with |x|.
  for (const DecoderModel model : kModels) {
    const Problem p = make_problem(8080, 45, 6, 3, 0.5, 100.0);
    const LinearFit fit = fit_linear_model(model, p.x, p.labels, 3, options_with(model, 0.01));
    expect_optimal(model, p, fit, 0.01, 1.0, decoder_model_name(model) + " scale 100");
  }
}

TEST(LinearModels, DecisionValuesPredictionsAndTies) {
  LinearFit fit;
  fit.coef = (Eigen::MatrixXd(2, 3) << 1, 0, -1, 2, 1, 0).finished();
  fit.intercept = Eigen::Vector3d(0.5, -1, 0);
  const Eigen::MatrixXd x = (Eigen::MatrixXd(2, 2) << 1, 1, -2, 0.5).finished();
  const Eigen::MatrixXd d = decision_values(fit, x);
  const Eigen::MatrixXd expected = (Eigen::MatrixXd(2, 3) << 3.5, 0, -1, -0.5, -0.5, 2).finished();
  EXPECT_EQ(d, expected);  // exact in binary floating point
  EXPECT_THROW(decision_values(fit, Eigen::MatrixXd::Ones(2, 3)), std::invalid_argument);

  // One decision function: 1 where d > 0, so 0 (and -0) are class 0.
  const Eigen::MatrixXd binary = (Eigen::MatrixXd(5, 1) << 0.0, -0.0, 1e-300, -1e-300, 7.0).finished();
  EXPECT_EQ(predicted_classes(binary), (std::vector<int>{0, 0, 1, 0, 1}));
  // Several: the first of the largest.
  const Eigen::MatrixXd multi = (Eigen::MatrixXd(4, 3) << 1, 3, 3, 2, 2, 2, -1, 5, 5, 0, -1, 0.5).finished();
  EXPECT_EQ(predicted_classes(multi), (std::vector<int>{1, 0, 1, 2}));
  EXPECT_EQ(predicted_classes(d), (std::vector<int>{0, 2}));
}

TEST(LinearModels, ClassProbabilities) {
  // Binary: [1 - sigmoid(d), sigmoid(d)], each computed without cancellation (the small one relative to 1e-14 at
  // d = +-40, where 1 - sigmoid(40) would round to 0) and finite for |d| up to 1e3; rows sum to 1 (1e-15).
  const Eigen::MatrixXd binary = (Eigen::MatrixXd(7, 1) << 0.0, 2.0, -3.0, 800.0, -1000.0, 40.0, -40.0).finished();
  const Eigen::MatrixXd pb = class_probabilities(binary);
  ASSERT_EQ(pb.cols(), 2);
  EXPECT_DOUBLE_EQ(pb(0, 1), 0.5);
  EXPECT_NEAR(pb(1, 1), 1.0 / (1.0 + std::exp(-2.0)), 1e-15);
  EXPECT_NEAR(pb(2, 0), 1.0 / (1.0 + std::exp(-3.0)), 1e-15);
  EXPECT_EQ(pb(3, 1), 1.0);
  EXPECT_EQ(pb(4, 0), 1.0);
  EXPECT_NEAR(pb(5, 0) / std::exp(-40.0), 1.0, 1e-14);
  EXPECT_NEAR(pb(6, 1) / std::exp(-40.0), 1.0, 1e-14);
  EXPECT_TRUE(pb.allFinite());
  EXPECT_LE((pb.rowwise().sum().array() - 1.0).abs().maxCoeff(), 1e-15);
  // Several: softmax over the row, stable at large values.
  const Eigen::MatrixXd multi =
      (Eigen::MatrixXd(3, 3) << 1000, 1000, -1000, 0, std::log(2.0), std::log(5.0), -800, -801, -802).finished();
  const Eigen::MatrixXd pm = class_probabilities(multi);
  EXPECT_TRUE(pm.allFinite());
  EXPECT_NEAR(pm(0, 0), 0.5, 1e-15);
  EXPECT_NEAR(pm(0, 2), 0.0, 1e-300);
  EXPECT_NEAR(pm(1, 0), 1.0 / 8.0, 1e-15);
  EXPECT_NEAR(pm(1, 2), 5.0 / 8.0, 1e-15);
  EXPECT_NEAR(pm(2, 1) / pm(2, 0), std::exp(-1.0), 1e-14);
  // A fitted model's probabilities: rows sum to 1 and the most probable class is the prediction.
  for (const int classes : {2, 4}) {
    const Problem p = make_problem(1234 + static_cast<uint64_t>(classes), 50, 5, classes, 0.7);
    const Eigen::MatrixXd dv =
        decision_values(fit_linear_model(DecoderModel::kLogistic, p.x, p.labels, classes, SolverOptions{}), p.x);
    const Eigen::MatrixXd prob = class_probabilities(dv);
    ASSERT_EQ(prob.cols(), classes);
    EXPECT_LE((prob.rowwise().sum().array() - 1.0).abs().maxCoeff(), 1e-15 * classes);
    EXPECT_GE(prob.minCoeff(), 0.0);
    const std::vector<int> predicted = predicted_classes(dv);
    for (Eigen::Index i = 0; i < prob.rows(); ++i) {
      Eigen::Index best = 0;
      prob.row(i).maxCoeff(&best);
      EXPECT_EQ(best, predicted[static_cast<size_t>(i)]);
    }
  }
}

TEST(LinearModels, NamesAndProbabilities) {
  EXPECT_EQ(decoder_model("logistic"), DecoderModel::kLogistic);
  EXPECT_EQ(decoder_model("svm"), DecoderModel::kSvmSquaredHinge);
  EXPECT_EQ(decoder_model("svm", "squared_hinge"), DecoderModel::kSvmSquaredHinge);
  EXPECT_EQ(decoder_model("svm", "hinge"), DecoderModel::kSvmHinge);
  EXPECT_EQ(decoder_model("ridge"), DecoderModel::kRidge);
  for (const DecoderModel model : kModels) EXPECT_EQ(decoder_model(decoder_model_name(model)), model);
  EXPECT_EQ(decoder_model_name(DecoderModel::kSvmSquaredHinge), "svm-squared-hinge");
  EXPECT_EQ(decoder_model_name(DecoderModel::kSvmHinge), "svm-hinge");
  EXPECT_TRUE(has_probabilities(DecoderModel::kLogistic));
  EXPECT_FALSE(has_probabilities(DecoderModel::kSvmHinge));
  EXPECT_FALSE(has_probabilities(DecoderModel::kRidge));
  EXPECT_THROW(decoder_model("lda"), std::invalid_argument);
  EXPECT_THROW(decoder_model("svm", "log"), std::invalid_argument);
}

TEST(LinearModels, InvalidInputThrows) {
  const Problem p = make_problem(55, 12, 3, 3, 1.0);
  for (const DecoderModel model : kModels) {
    const SolverOptions o = options_with(model, 1.0);
    const auto fit = [&](const Eigen::MatrixXd& x, std::vector<int> labels, int classes, const SolverOptions& opt) {
      return fit_linear_model(model, x, labels, classes, opt);
    };
    EXPECT_NO_THROW(fit(p.x, p.labels, 3, o));
    std::vector<int> bad = p.labels;
    bad[4] = 3;
    EXPECT_THROW(fit(p.x, bad, 3, o), std::invalid_argument) << "label out of range";
    bad[4] = -1;
    EXPECT_THROW(fit(p.x, bad, 3, o), std::invalid_argument) << "negative label";
    EXPECT_THROW(fit(p.x, p.labels, 4, o), std::invalid_argument) << "a class without samples";
    EXPECT_THROW(fit(p.x, std::vector<int>(12, 0), 1, o), std::invalid_argument) << "one class";
    EXPECT_THROW(fit(p.x.topRows(11), p.labels, 3, o), std::invalid_argument) << "sizes";
    EXPECT_THROW(fit(Eigen::MatrixXd(0, 3), {}, 2, o), std::invalid_argument) << "no samples";
    for (const double bad_value : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
      Eigen::MatrixXd x = p.x;
      x(5, 1) = bad_value;
      EXPECT_THROW(fit(x, p.labels, 3, o), std::invalid_argument) << "non-finite";
    }
    for (const double bad_c : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN()}) {
      EXPECT_THROW(fit(p.x, p.labels, 3, options_with(model, bad_c)), std::invalid_argument) << "C or alpha";
    }
  }
  try {
    std::vector<int> bad = p.labels;
    bad[2] = 7;
    fit_linear_model(DecoderModel::kLogistic, p.x, bad, 3, SolverOptions{});
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("label 7"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rtf
