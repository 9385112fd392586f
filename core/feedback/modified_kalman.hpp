// The modified Kalman filter of Koush et al. (2012) for neurofeedback time courses: a scalar local-level Kalman filter
// (random-walk state, noisy observation) that low-passes the detrended ROI signal and removes spikes. An update
// larger than a threshold is taken for a spike the first time in its direction: the sample is replaced by the
// prediction and the state is not corrected; a second large update in the same direction in a row is accepted (a real
// change of level). Noise variances and threshold scale with the signal's running standard deviation, as in OpenNFT.
// docs/algorithms/feedback.md.
#pragma once

#include <cstdint>

#include "core/feedback/feedback_config.hpp"

namespace rtf {

class ModifiedKalmanFilter {
 public:
  struct Output {
    double value = 0.0;  // the filtered sample
    bool spike = false;  // the sample was replaced by the prediction
  };

  explicit ModifiedKalmanFilter(const KalmanOptions& options = {}) : options_(options) {}

  // One step. `sigma` (>= 0): the standard deviation that sets Q = process_noise sigma^2, R = measurement_noise
  // sigma^2 and the threshold spike_threshold sigma. `steps` (>= 1): volumes since the previous sample; the prediction
  // adds steps Q to the state variance, so a skipped volume widens the uncertainty as it would have.
  Output update(double measurement, double sigma, int64_t steps = 1);

  double state() const { return x_; }
  double variance() const { return p_; }
  void reset();

 private:
  KalmanOptions options_;
  double x_ = 0.0;  // state estimate (OpenNFT starts at 0 with variance 0)
  double p_ = 0.0;
  int positive_spikes_ = 0;  // consecutive-spike counters per direction (OpenNFT's fPositDerivSpike / fNegat...)
  int negative_spikes_ = 0;
};

}  // namespace rtf
