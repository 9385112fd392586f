// The phantom's experimental design: block or BIDS events, conditions, and each condition's regressor (stimulus
// boxcar convolved with SPM's canonical HRF at a fine microtime, scaled to a peak of 1 over the run).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/design/spm_hrf.hpp"
#include "sim/phantom/phantom_spec.hpp"

namespace rtf::sim {

// Blocks of `trial_type`: rest for off_s, then on for on_s, repeated while an onset falls inside [0, run_s).
std::vector<Event> block_events(double on_s, double off_s, double run_s, const std::string& trial_type = "task");

// BIDS events.tsv: a header row naming the columns (onset and duration required, trial_type optional, any
// order, extra columns ignored), then one event per row; "n/a" duration is 0, a missing or "n/a" trial_type is
// "task". Throws std::invalid_argument naming the file and line of any problem.
std::vector<Event> parse_events_tsv(std::string_view text, const std::string& name = "events.tsv");
std::vector<Event> read_events_tsv(const std::filesystem::path& path);

class Design {
 public:
  Design() = default;
  // Regressors for `events` over `volumes` volumes of `tr_s`, at microtime TR / microtime.
  Design(std::vector<Event> events, int64_t volumes, double tr_s, int microtime, const SpmHrfParams& hrf = {});

  const std::vector<std::string>& conditions() const { return conditions_; }  // in order of first appearance
  const std::vector<Event>& events() const { return events_; }                // sorted by onset
  int condition_index(const std::string& trial_type) const;                   // -1 if absent
  double microtime_s() const { return dt_; }

  // Regressor of condition c at time t seconds from the start of volume 0 (linear interpolation of the fine
  // grid; 0 outside it). Peak-normalised: its largest value on [0, volumes * TR) is 1 (0 for no stimulus).
  double value(int c, double t_s) const;
  // The factor the convolved regressor was divided by to reach a peak of 1.
  double peak(int c) const { return peaks_[static_cast<size_t>(c)]; }
  // volumes x conditions: value(c, t * TR + offset_s).
  std::vector<std::vector<double>> sampled(double offset_s = 0.0) const;

 private:
  std::vector<Event> events_;
  std::vector<std::string> conditions_;
  int64_t volumes_ = 0;
  double tr_s_ = 0.0;
  double dt_ = 0.0;
  std::vector<std::vector<double>> fine_;  // per condition, at t = k * dt
  std::vector<double> peaks_;
};

}  // namespace rtf::sim
