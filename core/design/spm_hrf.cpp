// SPM canonical HRF: difference of gamma densities sampled at dt, normalised to unit sum.
#include "core/design/spm_hrf.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace rtf {
namespace {

// Gamma density of shape k and scale s at x (0 for x <= 0), through logs to stay finite for large k.
double gamma_pdf(double x, double shape, double scale) {
  if (x <= 0.0) return 0.0;
  return std::exp((shape - 1.0) * std::log(x) - x / scale - std::lgamma(shape) - shape * std::log(scale));
}

void validate(const SpmHrfParams& p) {
  const bool ok = p.response_delay_s > 0 && p.undershoot_delay_s > 0 && p.response_dispersion > 0 &&
                  p.undershoot_dispersion > 0 && p.ratio > 0 && p.length_s > 0 && std::isfinite(p.onset_s);
  if (!ok) {
    throw std::invalid_argument(fmt::format(
        "spm_hrf: delays, dispersions, ratio and length must be positive (got {}, {}, {}, {}, {}, length {})",
        p.response_delay_s, p.undershoot_delay_s, p.response_dispersion, p.undershoot_dispersion, p.ratio, p.length_s));
  }
}

}  // namespace

double spm_hrf_unnormalised(double t_s, const SpmHrfParams& p) {
  const double x = t_s - p.onset_s;
  return gamma_pdf(x, p.response_delay_s / p.response_dispersion, p.response_dispersion) -
         gamma_pdf(x, p.undershoot_delay_s / p.undershoot_dispersion, p.undershoot_dispersion) / p.ratio;
}

std::vector<double> spm_hrf(double dt_s, const SpmHrfParams& params) {
  validate(params);
  if (!(dt_s > 0.0) || !std::isfinite(dt_s)) throw std::invalid_argument(fmt::format("spm_hrf: dt = {} s", dt_s));
  const auto n = static_cast<size_t>(std::floor(params.length_s / dt_s + 1e-9)) + 1;
  std::vector<double> h(n);
  double sum = 0.0;
  for (size_t k = 0; k < n; ++k) {
    h[k] = spm_hrf_unnormalised(static_cast<double>(k) * dt_s, params);
    sum += h[k];
  }
  if (!(std::abs(sum) > 0.0)) throw std::invalid_argument("spm_hrf: the sampled kernel sums to zero");
  for (double& v : h) v /= sum;
  return h;
}

}  // namespace rtf
