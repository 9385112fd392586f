// Mutual information from a joint histogram, and the binning of intensities.
#include "core/registration/mutual_information.hpp"

#include <cmath>
#include <stdexcept>

namespace rtf {

MiBinning mi_binning(double fixed_min, double fixed_max, double moving_min, double moving_max, int bins) {
  MiBinning b;
  const double fixed_range = fixed_max > fixed_min ? fixed_max - fixed_min : 1.0;
  const double moving_range = moving_max > moving_min ? moving_max - moving_min : 1.0;
  b.fixed_min = fixed_min;
  b.fixed_inv = static_cast<double>(bins) / fixed_range * (1.0 - 1e-6);  // the maximum falls in the last bin
  b.moving_min = moving_min;
  b.moving_inv = static_cast<double>(bins - 5) / moving_range;
  return b;
}

double mutual_information(std::span<const double> histogram, int bins, std::vector<double>* log_ratio) {
  const auto n = static_cast<size_t>(bins);
  if (histogram.size() != n * n) throw std::invalid_argument("mutual information: histogram size");
  double total = 0.0;
  for (double h : histogram) total += h;
  if (log_ratio) log_ratio->assign(n * n, 0.0);
  if (!(total > 0.0)) return 0.0;
  std::vector<double> pf(n, 0.0), pm(n, 0.0);
  for (size_t a = 0; a < n; ++a) {
    for (size_t k = 0; k < n; ++k) {
      const double p = histogram[a * n + k] / total;
      pf[a] += p;
      pm[k] += p;
    }
  }
  double mi = 0.0;
  for (size_t a = 0; a < n; ++a) {
    for (size_t k = 0; k < n; ++k) {
      const double p = histogram[a * n + k] / total;
      if (!(p > 0.0)) continue;
      mi += p * std::log(p / (pf[a] * pm[k]));
      if (log_ratio) (*log_ratio)[a * n + k] = std::log(p / pm[k]);
    }
  }
  return mi;
}

}  // namespace rtf
