// Modified Kalman filter (Koush et al. 2012): predict, correct, and the spike rule on the size of the correction.
#include "core/feedback/modified_kalman.hpp"

#include <cmath>

namespace rtf {

ModifiedKalmanFilter::Output ModifiedKalmanFilter::update(double measurement, double sigma, int64_t steps) {
  // Defensive: a non-finite input never reaches the state (the caller leaves such volumes out).
  if (!std::isfinite(measurement) || !std::isfinite(sigma)) return Output{x_, true};
  const double var = sigma * sigma;
  const double q = options_.process_noise * var, r = options_.measurement_noise * var;
  const double threshold = options_.spike_threshold * sigma;

  // Predict (random walk: the state carries over, its variance grows by Q per volume).
  const double x_pred = x_;
  const double p_pred = p_ + static_cast<double>(steps < 1 ? 1 : steps) * q;
  // Correct.
  const double denominator = p_pred + r;
  const double gain = denominator > 0.0 ? p_pred / denominator : 0.0;
  const double correction = gain * (measurement - x_pred);
  const double x_upd = x_pred + correction;
  const double p_upd = (1.0 - gain) * p_pred;

  const auto accept = [&]() {
    x_ = x_upd;
    p_ = p_upd;
    return Output{x_upd, false};
  };
  const auto reject = [&]() {  // a spike: the prediction stands
    x_ = x_pred;
    p_ = p_pred;
    return Output{x_pred, true};
  };

  // "<=" where OpenNFT has "<": with sigma = 0 (the first sample) the correction is 0 and is not a spike.
  if (std::abs(correction) <= threshold) {
    positive_spikes_ = 0;
    negative_spikes_ = 0;
    return accept();
  }
  int& run = correction > 0.0 ? positive_spikes_ : negative_spikes_;
  if (run < 1) {
    ++run;
    return reject();
  }
  run = 0;  // the second large update in this direction: a change of level, accepted
  return accept();
}

void ModifiedKalmanFilter::reset() {
  x_ = 0.0;
  p_ = 0.0;
  positive_spikes_ = 0;
  negative_spikes_ = 0;
}

}  // namespace rtf
