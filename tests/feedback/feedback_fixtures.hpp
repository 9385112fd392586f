// Shared fixtures for the neurofeedback tests: a block design (rest / regulation, 20 s each) and a configuration
// whose processing is exact on noise-free signals (Kalman and scaling off, every GLM column from the first volume).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/design/events.hpp"
#include "core/feedback/feedback_config.hpp"

namespace rtf::feedback_test {

// Regulation blocks "up" of `block_s` seconds starting at block_s, 3 block_s, 5 block_s, ... within `run_s`; with
// `named_rest`, "rest" events fill the gaps from 0.
inline std::vector<Event> block_events(double run_s, double block_s = 20.0, bool named_rest = false) {
  std::vector<Event> events;
  for (int64_t k = 0; 2.0 * block_s * static_cast<double>(k) < run_s; ++k) {
    const double onset = 2.0 * block_s * static_cast<double>(k);
    if (named_rest) events.push_back({onset, block_s, "rest", std::nullopt});
    if (onset + block_s < run_s) events.push_back({onset + block_s, block_s, "up", std::nullopt});
  }
  return events;
}

// One ROI, TR 2 s, delay 4 s, rest as the baseline; Kalman and scaling off; a delayed-boxcar task column and the
// linear drift fitted from the start.
inline FeedbackConfig exact_config(int64_t n_volumes, int64_t n_rois = 1) {
  FeedbackConfig c;
  c.tr_s = 2.0;
  c.n_volumes = n_volumes;
  c.n_rois = n_rois;
  c.rois = {0};
  c.hrf_delay_s = 4.0;
  c.kalman.enabled = false;
  c.scaling.enabled = false;
  c.detrend.task_model = TaskModel::kDelayedBoxcar;
  c.detrend.regressor_step = 1;
  return c;
}

// 1 when volume i's shifted time i tr - delay lies in an "up" block of block_events(), else 0.
inline double shifted_box(int64_t i, double tr, double delay, double block_s = 20.0) {
  const double s = static_cast<double>(i) * tr - delay;
  if (s < 0.0) return 0.0;
  const auto k = static_cast<int64_t>(s / block_s);  // block number: odd ones are "up"
  return k % 2 == 1 ? 1.0 : 0.0;
}

}  // namespace rtf::feedback_test
