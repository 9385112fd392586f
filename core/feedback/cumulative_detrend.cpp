// Cumulative-GLM detrending: the design over the volumes so far is rebuilt and solved every TR (complete orthogonal
// decomposition, double precision).
#include "core/feedback/cumulative_detrend.hpp"

#include <fmt/format.h>

#include <Eigen/QR>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/temporal/detrend_basis.hpp"

namespace rtf {
namespace {

constexpr int kMotionParameters = 6;

// Centres column `c` over its rows and scales it to unit root-mean-square; false when it is (numerically) constant.
bool centre_and_scale(Eigen::Ref<Eigen::VectorXd> c) {
  const double scale = 1.0 + c.cwiseAbs().maxCoeff();
  c.array() -= c.mean();
  const double rms = std::sqrt(c.squaredNorm() / static_cast<double>(c.size()));
  if (!(rms > 1e-10 * scale)) return false;
  c /= rms;
  return true;
}

}  // namespace

CumulativeDetrend::CumulativeDetrend(const DetrendOptions& options, int64_t n_volumes, Eigen::MatrixXd task,
                                     int64_t n_series)
    : options_(options), n_volumes_(n_volumes), task_(std::move(task)) {
  if (n_volumes <= 0 || n_series <= 0) throw std::invalid_argument("cumulative detrend: empty run or no series");
  if (task_.rows() != n_volumes) {
    throw std::invalid_argument(
        fmt::format("cumulative detrend: task regressors have {} rows for {} volumes", task_.rows(), n_volumes));
  }
  if (!task_.allFinite()) throw std::invalid_argument("cumulative detrend: non-finite task regressors");
  if (options.drift_order < 0 || options.drift_order > 3) {
    throw std::invalid_argument("cumulative detrend: drift order must be 0..3");
  }
  drift_ = legendre_basis(n_volumes, options.drift_order).rightCols(options.drift_order);
  volumes_.resize(static_cast<Eigen::Index>(n_volumes));
  y_.resize(static_cast<Eigen::Index>(n_volumes), static_cast<Eigen::Index>(n_series));
  motion_.resize(static_cast<Eigen::Index>(n_volumes), kMotionParameters);
  full_columns_ = 1 + options.drift_order + (options.motion_regressors ? kMotionParameters : 0) + task_.cols();
  step_ = options.regressor_step > 0 ? options.regressor_step : full_columns_;
}

DetrendResult CumulativeDetrend::add(int64_t volume, std::span<const double> values, std::span<const double> motion) {
  if (volume < 0 || volume >= n_volumes_) {
    throw std::invalid_argument(fmt::format("cumulative detrend: volume {} outside 0..{}", volume, n_volumes_ - 1));
  }
  if (count_ > 0 && volume <= volumes_(count_ - 1)) {
    throw std::invalid_argument(
        fmt::format("cumulative detrend: volume {} after volume {}", volume, volumes_(count_ - 1)));
  }
  if (static_cast<Eigen::Index>(values.size()) != y_.cols()) {
    throw std::invalid_argument(fmt::format("cumulative detrend: {} values for {} series", values.size(), y_.cols()));
  }
  if (options_.motion_regressors && motion.size() != kMotionParameters) {
    throw std::invalid_argument(fmt::format("cumulative detrend: {} motion parameters, expected 6", motion.size()));
  }
  const Eigen::Index row = count_;
  volumes_(row) = static_cast<int>(volume);
  for (Eigen::Index s = 0; s < y_.cols(); ++s) y_(row, s) = values[static_cast<size_t>(s)];
  if (options_.motion_regressors) {
    for (Eigen::Index m = 0; m < kMotionParameters; ++m) motion_(row, m) = motion[static_cast<size_t>(m)];
  }
  ++count_;
  const Eigen::Index n = count_;

  // Stepwise entry (OpenNFT): constant; + drift; + motion and task.
  const bool with_drift = n >= step_;
  const bool with_rest = n >= 2 * step_;

  enum class Kind { kConstant, kDrift, kMotion, kTask };
  std::vector<Kind> kinds;
  Eigen::MatrixXd x(n, full_columns_);
  Eigen::Index p = 0;
  x.col(p++).setOnes();
  kinds.push_back(Kind::kConstant);
  if (with_drift) {
    for (Eigen::Index j = 0; j < drift_.cols(); ++j) {
      for (Eigen::Index r = 0; r < n; ++r) x(r, p) = drift_(volumes_(r), j);
      if (centre_and_scale(x.col(p))) {
        kinds.push_back(Kind::kDrift);
        ++p;
      }
    }
  }
  if (with_rest && options_.motion_regressors) {
    for (Eigen::Index m = 0; m < kMotionParameters; ++m) {
      x.col(p) = motion_.col(m).head(n);
      if (centre_and_scale(x.col(p))) {
        kinds.push_back(Kind::kMotion);
        ++p;
      }
    }
  }
  if (with_rest) {
    for (Eigen::Index j = 0; j < task_.cols(); ++j) {
      for (Eigen::Index r = 0; r < n; ++r) x(r, p) = task_(volumes_(r), j);
      if (x.col(p).cwiseAbs().maxCoeff() > 1e-12) {  // a condition not yet seen is left out
        kinds.push_back(Kind::kTask);
        ++p;
      }
    }
  }
  const Eigen::MatrixXd design = x.leftCols(p);

  // The first stored row is subtracted first so that the fit works on the fluctuations, not on the ~1000 level.
  const Eigen::RowVectorXd shift = y_.row(0);
  const Eigen::MatrixXd yc = y_.topRows(n).rowwise() - shift;
  const Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXd> cod(design);
  const Eigen::MatrixXd beta = cod.solve(yc);

  DetrendResult result;
  result.columns = p;
  result.detrended.resize(y_.cols());
  result.level.resize(y_.cols());
  const Eigen::Index last = n - 1;
  for (Eigen::Index s = 0; s < y_.cols(); ++s) {
    double nuisance = 0.0, task = 0.0, level = shift(s);
    for (Eigen::Index c = 0; c < p; ++c) {
      const double part = design(last, c) * beta(c, s);
      const Kind k = kinds[static_cast<size_t>(c)];
      if (k == Kind::kTask) {
        task += part;
      } else {
        nuisance += part;
        if (k != Kind::kMotion) level += part;
      }
    }
    double d = yc(last, s) - nuisance;
    if (!options_.retain_task_fit) d -= task;
    result.detrended(s) = d;
    result.level(s) = level;
  }
  return result;
}

}  // namespace rtf
