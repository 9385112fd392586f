// SPM's canonical haemodynamic response function (spm_hrf): a difference of two gamma densities, sampled
// every dt seconds and normalised to sum 1 (Friston et al. 1998; SPM12's defaults). See
// docs/algorithms/phantom.md.
#pragma once

#include <vector>

namespace rtf {

// spm_hrf's parameter vector p(1..7), SPM's defaults.
struct SpmHrfParams {
  double response_delay_s = 6.0;       // p(1): delay of the response (shape / rate of the first gamma)
  double undershoot_delay_s = 16.0;    // p(2): delay of the undershoot
  double response_dispersion = 1.0;    // p(3): dispersion (scale, s) of the response
  double undershoot_dispersion = 1.0;  // p(4): dispersion of the undershoot
  double ratio = 6.0;                  // p(5): ratio of response to undershoot
  double onset_s = 0.0;                // p(6): onset
  double length_s = 32.0;              // p(7): length of the kernel
};

// Continuous HRF before normalisation at time t (seconds): g(t - onset; d1/s1, s1) - g(t - onset; d2/s2, s2) / ratio,
// g(x; k, s) the gamma density of shape k and scale s (0 for x <= 0).
double spm_hrf_unnormalised(double t_s, const SpmHrfParams& params = {});

// Samples at t = 0, dt, ..., floor(length / dt) * dt, divided by their sum (spm_hrf(dt, p)). Throws
// std::invalid_argument for dt <= 0, non-positive delays/dispersions/ratio/length, or a zero sum.
std::vector<double> spm_hrf(double dt_s, const SpmHrfParams& params = {});

}  // namespace rtf
