// The ball-and-stick model's predicted signal in double.
#include "core/diffusion/ball_stick_signal.hpp"

#include <cmath>

namespace rtf {

std::array<double, 3> fibre_direction(double th, double ph) {
  return {std::sin(th) * std::cos(ph), std::sin(th) * std::sin(ph), std::cos(th)};
}

double compartment_attenuation(int model, double b, double x, double d, double d_std) {
  if (model == 1 || d_std < 1e-5) return std::exp(-b * d * x);
  const double var = d_std * d_std;
  return std::exp(std::log(d / (d + b * x * var)) * (d * d / var));
}

std::vector<double> ball_stick_signal(const DiffusionScheme& scheme, const BallStickParams& p, int fibres, int model) {
  const int n = scheme.measurements();
  std::vector<double> s(static_cast<size_t>(n));
  double fsum = 0;
  for (int j = 0; j < fibres; ++j) fsum += p.f[static_cast<size_t>(j)];
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<size_t>(i);
    const double b = scheme.bvals[k];
    double value = (1.0 - fsum) * compartment_attenuation(model, b, 1.0, p.d, p.d_std);
    for (int j = 0; j < fibres; ++j) {
      const auto fj = static_cast<size_t>(j);
      const std::array<double, 3> v = fibre_direction(p.th[fj], p.ph[fj]);
      const std::array<double, 3>& g = scheme.bvecs[k];
      const double dot = g[0] * v[0] + g[1] * v[1] + g[2] * v[2];
      value += p.f[fj] * compartment_attenuation(model, b, dot * dot, p.d, p.d_std);
    }
    s[k] = p.s0 * value;
  }
  return s;
}

}  // namespace rtf
