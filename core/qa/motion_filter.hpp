// The respiration filter of the motion parameters before FD, for fast (multiband) TRs where breathing moves the
// estimated head position without moving the head (Fair et al. 2020, NeuroImage 208:116400; their pipeline's design):
// a notch over the respiration band, or a low-pass, each band edge folded to where it aliases at the TR. Applied
// causally, volume by volume (the live stage has no future volumes): the filter run twice in cascade, the causal
// counterpart of the offline pipeline's forward-backward pass (the same magnitude response). docs/algorithms/qa.md.
#pragma once

#include <array>
#include <string>

#include "core/geometry/rigid_transform.hpp"

namespace rtf {

enum class FdFilterKind { kNone, kNotch, kLowpass };

struct FdFilterOptions {
  FdFilterKind kind = FdFilterKind::kNone;
  double band_low_bpm = 18.582, band_high_bpm = 25.726;  // notch: respiration band, breaths/min (ABCD's)
  double cutoff_bpm = 6.0;                               // low-pass cutoff, breaths/min (Gratton et al. 2020)
};

// "none", "notch" or "lowpass"; throws std::invalid_argument otherwise.
FdFilterKind parse_fd_filter(const std::string& name);

// A second-order section, a0 = 1: y = b0 x + b1 x1 + b2 x2 - a1 y1 - a2 y2.
struct Biquad {
  double b0 = 1, b1 = 0, b2 = 0, a1 = 0, a2 = 0;
};

// Where a frequency f (Hz) appears when sampled every tr seconds: |f - floor((f + fNy) / fs) fs|.
double aliased_frequency_hz(double f_hz, double tr_s);
// The notch of MATLAB's iirnotch / scipy.signal.iirnotch at the centre of the folded band, of its width (-3 dB).
Biquad notch_filter(double tr_s, double band_low_bpm, double band_high_bpm);
// A second-order Butterworth low-pass (scipy.signal.butter(2, ...)) at the folded cutoff.
Biquad lowpass_filter(double tr_s, double cutoff_bpm);

class MotionFilter {
 public:
  // Throws std::invalid_argument for a TR not > 0, a band not 0 < low < high, or a folded frequency at 0 or Nyquist.
  MotionFilter(const FdFilterOptions& options, double tr_s);
  // The next volume's parameters, filtered (unchanged for kNone).
  RigidParams next(const RigidParams& raw);

 private:
  struct State {
    double s1 = 0, s2 = 0;  // transposed direct form II
  };
  double run(const Biquad& f, State& s, double x) const;

  FdFilterKind kind_;
  Biquad filter_;
  std::array<std::array<State, 2>, 6> state_{};  // per parameter, per pass
};

}  // namespace rtf
