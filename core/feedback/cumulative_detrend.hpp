// Cumulative-GLM detrending of ROI time courses for neurofeedback (OpenNFT's cGLM): every TR, one least-squares fit
// over all volumes so far, in double, of a constant, Legendre drift, optional motion parameters and optional task
// regressors; the detrended value of the newest volume is its raw value minus the fitted nuisance part (constant,
// drift, motion), with the fitted task effect kept unless asked otherwise. Nothing is updated incrementally, so a long
// run cannot drift. One fit serves every ROI. docs/algorithms/feedback.md.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <span>

#include "core/feedback/feedback_config.hpp"

namespace rtf {

struct DetrendResult {
  Eigen::VectorXd detrended;  // per series: raw - (constant + drift + motion) fit [- task fit], at the newest volume
  Eigen::VectorXd level;      // per series: fitted constant + drift at the newest volume (the signal level)
  Eigen::Index columns = 0;   // columns in this TR's fit (after the stepwise entry, zero columns left out)
};

class CumulativeDetrend {
 public:
  // `task`: n_volumes x k task regressors indexed by volume (k may be 0). Throws std::invalid_argument for
  // n_volumes <= 0, n_series <= 0, a task matrix with other than n_volumes rows, or non-finite task values.
  CumulativeDetrend(const DetrendOptions& options, int64_t n_volumes, Eigen::MatrixXd task, int64_t n_series);

  // Adds `volume` (strictly greater than the previous one, < n_volumes) with one finite value per series and, when
  // motion regressors are on, its six motion parameters; refits over every volume so far. Throws std::invalid_argument
  // for an out-of-order or out-of-range volume or wrong sizes; values must be finite (the caller checks).
  DetrendResult add(int64_t volume, std::span<const double> values, std::span<const double> motion = {});

  int64_t size() const { return count_; }
  // The full model's column count and the stepwise entry step in use.
  int64_t full_columns() const { return full_columns_; }
  int64_t step() const { return step_; }

 private:
  DetrendOptions options_;
  int64_t n_volumes_;
  Eigen::MatrixXd task_;
  Eigen::MatrixXd drift_;  // n_volumes x drift_order: Legendre P_1.. of 2 i / (n_volumes - 1) - 1
  int64_t count_ = 0;
  Eigen::VectorXi volumes_;  // volume index per stored row
  Eigen::MatrixXd y_;        // rows: stored volumes, columns: series
  Eigen::MatrixXd motion_;   // rows: stored volumes, 6 columns
  int64_t full_columns_ = 0;
  int64_t step_ = 0;
};

}  // namespace rtf
