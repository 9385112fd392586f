// The decoders' references: plain loops in double.
#include "core/reference/decoding_reference.hpp"

#include <Eigen/Dense>
#include <cmath>

#include "core/reference/detrend_reference.hpp"

namespace rtf::reference {

void decoding_features(std::span<const float> series, int64_t p, const Eigen::MatrixXd& design,
                       std::span<const int> rows, bool zscore, std::vector<double>& x) {
  const auto t_count = static_cast<int64_t>(rows.size());
  std::vector<double> residual;
  if (design.size() > 0) {
    residual = detrend(series, p, design, true);
  } else {
    residual.assign(series.begin(), series.end());
  }
  for (int64_t f = 0; f < p; ++f) {
    bool constant = true;
    for (int64_t t = 1; t < t_count; ++t)
      constant = constant && series[static_cast<size_t>(t * p + f)] == series[static_cast<size_t>(f)];
    double mean = 0.0, sd = 1.0;
    if (zscore) {
      for (int64_t t = 0; t < t_count; ++t) mean += residual[static_cast<size_t>(t * p + f)];
      mean /= static_cast<double>(t_count);
      double squares = 0.0;
      for (int64_t t = 0; t < t_count; ++t) {
        const double d = residual[static_cast<size_t>(t * p + f)] - mean;
        squares += d * d;
      }
      sd = std::sqrt(squares / static_cast<double>(t_count));
    }
    for (int64_t t = 0; t < t_count; ++t) {
      const int row = rows[static_cast<size_t>(t)];
      if (row < 0) continue;
      const double v = residual[static_cast<size_t>(t * p + f)];
      x[static_cast<size_t>(row * p + f)] = constant || !(sd > 0.0) ? 0.0 : (v - mean) / sd;
    }
  }
}

Eigen::MatrixXd gram(std::span<const float> x, int64_t n, int64_t p) {
  Eigen::MatrixXd k(n, n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t f = 0; f < p; ++f) {
        sum += static_cast<double>(x[static_cast<size_t>(i * p + f)]) *
               static_cast<double>(x[static_cast<size_t>(j * p + f)]);
      }
      k(i, j) = sum;
    }
  }
  return k;
}

Eigen::MatrixXd back_projection(std::span<const float> x, int64_t n, int64_t p, const Eigen::MatrixXd& beta) {
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(p, beta.cols());
  for (int64_t f = 0; f < p; ++f) {
    for (Eigen::Index m = 0; m < beta.cols(); ++m) {
      for (int64_t i = 0; i < n; ++i) w(f, m) += beta(i, m) * static_cast<double>(x[static_cast<size_t>(i * p + f)]);
    }
  }
  return w;
}

std::vector<double> live_decision(std::span<const float> volumes, int64_t volume_size, std::span<const int> voxels,
                                  const Eigen::MatrixXd& coef, const Eigen::VectorXd& intercept, int detrend, int scale,
                                  std::span<const double> shift, std::span<const double> scale_by) {
  const int64_t n = static_cast<int64_t>(volumes.size()) / volume_size;
  std::vector<double> out(intercept.data(), intercept.data() + intercept.size());
  for (size_t f = 0; f < voxels.size(); ++f) {
    Eigen::VectorXd y(n);
    for (int64_t t = 0; t < n; ++t) y(t) = volumes[static_cast<size_t>(t * volume_size + voxels[f])];
    Eigen::VectorXd residual = y;
    if (detrend >= 0) {
      Eigen::MatrixXd design(n, detrend + 1);
      for (int64_t t = 0; t < n; ++t) {
        design(t, 0) = 1.0;
        if (detrend == 1) design(t, 1) = static_cast<double>(t);
      }
      const Eigen::MatrixXd xtx = design.transpose() * design;
      // A line through one point is any line: the mean then (the device's b = 0 for n = 1).
      const Eigen::VectorXd beta = n > detrend ? Eigen::VectorXd(xtx.ldlt().solve(design.transpose() * y))
                                               : Eigen::VectorXd(Eigen::VectorXd::Constant(1, y.mean()));
      residual = y - design.leftCols(beta.size()) * beta;
    }
    double z = residual(n - 1);
    if (scale == 1) {
      const double sd = std::sqrt(residual.squaredNorm() / static_cast<double>(n));
      z = sd > 0.0 ? z / sd : 0.0;
    } else if (scale == 2) {
      z = (z - shift[f]) / scale_by[f];
    }
    for (Eigen::Index m = 0; m < coef.cols(); ++m)
      out[static_cast<size_t>(m)] += coef(static_cast<Eigen::Index>(f), m) * z;
  }
  return out;
}

}  // namespace rtf::reference
