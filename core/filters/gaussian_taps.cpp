// Gaussian taps for separable smoothing.
#include "core/filters/gaussian_taps.hpp"

#include <cmath>
#include <stdexcept>

namespace rtf {

double fwhm_to_sigma(double fwhm) {
  return fwhm / (2.0 * std::sqrt(2.0 * std::log(2.0)));
}

std::vector<double> gaussian_taps(double sigma_voxels, double truncate_sigmas) {
  if (!std::isfinite(sigma_voxels)) throw std::invalid_argument("gaussian_taps: sigma is not finite");
  if (sigma_voxels <= 0.0) return {1.0};
  const int radius = static_cast<int>(std::ceil(truncate_sigmas * sigma_voxels));
  if (radius > 1024) throw std::invalid_argument("gaussian_taps: filter radius over 1024 voxels");
  std::vector<double> taps(static_cast<size_t>(2 * radius + 1));
  double sum = 0.0;
  for (size_t i = 0; i < taps.size(); ++i) {
    const double k = static_cast<double>(i) - radius;
    const double w = std::exp(-0.5 * (k * k) / (sigma_voxels * sigma_voxels));
    taps[i] = w;
    sum += w;
  }
  for (auto& w : taps) w /= sum;
  return taps;
}

}  // namespace rtf
