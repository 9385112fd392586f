// Filter design by the closed forms of scipy's iirnotch and a bilinear second-order Butterworth; the causal cascade.
#include "core/qa/motion_filter.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace rtf {

FdFilterKind parse_fd_filter(const std::string& name) {
  if (name == "none") return FdFilterKind::kNone;
  if (name == "notch") return FdFilterKind::kNotch;
  if (name == "lowpass") return FdFilterKind::kLowpass;
  throw std::invalid_argument(fmt::format("fd_filter '{}': none, notch or lowpass", name));
}

double aliased_frequency_hz(double f_hz, double tr_s) {
  const double fs = 1.0 / tr_s, nyquist = fs / 2.0;
  return std::abs(f_hz - std::floor((f_hz + nyquist) / fs) * fs);
}

namespace {

// A frequency (Hz) folded at the TR, as a fraction of Nyquist; refused where no filter can be designed.
double normalised(double f_hz, double tr_s, const char* what) {
  const double w = aliased_frequency_hz(f_hz, tr_s) / (0.5 / tr_s);
  if (!(w > 0.0 && w < 1.0)) {
    throw std::invalid_argument(fmt::format(
        "fd_filter: the {} ({:.4g} Hz) folds to {:.4g} of Nyquist at TR {} s: no filter can be designed there", what,
        f_hz, w, tr_s));
  }
  return w;
}

}  // namespace

Biquad notch_filter(double tr_s, double band_low_bpm, double band_high_bpm) {
  if (!(band_low_bpm > 0 && band_low_bpm < band_high_bpm)) {
    throw std::invalid_argument(fmt::format("fd_filter: the band must be 0 < low < high breaths/min (got {} to {})",
                                            band_low_bpm, band_high_bpm));
  }
  const double lo = normalised(band_low_bpm / 60.0, tr_s, "band's low edge");
  const double hi = normalised(band_high_bpm / 60.0, tr_s, "band's high edge");
  const double w0 = 0.5 * (lo + hi) * std::numbers::pi, bw = std::abs(hi - lo) * std::numbers::pi;
  if (!(bw > 0)) throw std::invalid_argument("fd_filter: the band folds to a single frequency at this TR");
  // iirnotch: beta = tan(bw / 2) (gain 1/sqrt(2) at the band's edges), gain = 1 / (1 + beta).
  const double gain = 1.0 / (1.0 + std::tan(bw / 2.0));
  return {gain, -2.0 * gain * std::cos(w0), gain, -2.0 * gain * std::cos(w0), 2.0 * gain - 1.0};
}

Biquad lowpass_filter(double tr_s, double cutoff_bpm) {
  if (!(cutoff_bpm > 0)) throw std::invalid_argument(fmt::format("fd_filter: cutoff {} breaths/min", cutoff_bpm));
  const double wn = normalised(cutoff_bpm / 60.0, tr_s, "cutoff");
  // The bilinear transform of the analogue Butterworth pair of poles, prewarped to wn.
  const double k = std::tan(std::numbers::pi * wn / 2.0), root2 = std::numbers::sqrt2;
  const double norm = 1.0 / (1.0 + root2 * k + k * k);
  const double b0 = k * k * norm;
  return {b0, 2.0 * b0, b0, 2.0 * (k * k - 1.0) * norm, (1.0 - root2 * k + k * k) * norm};
}

MotionFilter::MotionFilter(const FdFilterOptions& options, double tr_s) : kind_(options.kind) {
  if (kind_ == FdFilterKind::kNone) return;
  if (!(tr_s > 0) || !std::isfinite(tr_s)) throw std::invalid_argument(fmt::format("fd_filter: TR {} s", tr_s));
  filter_ = kind_ == FdFilterKind::kNotch ? notch_filter(tr_s, options.band_low_bpm, options.band_high_bpm)
                                          : lowpass_filter(tr_s, options.cutoff_bpm);
}

double MotionFilter::run(const Biquad& f, State& s, double x) const {
  const double y = f.b0 * x + s.s1;
  s.s1 = f.b1 * x - f.a1 * y + s.s2;
  s.s2 = f.b2 * x - f.a2 * y;
  return y;
}

RigidParams MotionFilter::next(const RigidParams& raw) {
  if (kind_ == FdFilterKind::kNone) return raw;
  RigidParams out;
  for (int p = 0; p < 6; ++p) {
    const double x = p < 3 ? raw.translation_mm[static_cast<size_t>(p)] : raw.rotation_deg[static_cast<size_t>(p - 3)];
    auto& states = state_[static_cast<size_t>(p)];
    const double y = run(filter_, states[1], run(filter_, states[0], x));
    (p < 3 ? out.translation_mm[static_cast<size_t>(p)] : out.rotation_deg[static_cast<size_t>(p - 3)]) = y;
  }
  return out;
}

}  // namespace rtf
