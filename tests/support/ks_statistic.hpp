// The one-sample Kolmogorov–Smirnov statistic D = sup |F_n(x) - F(x)| of draws against an exact CDF, for the tests of
// the random draws and the samplers (critical value at alpha = 0.001 for large n: 1.95 / sqrt(n)).
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

namespace rtf::test {

inline double ks_statistic(std::vector<double> x, const std::function<double(double)>& cdf) {
  std::sort(x.begin(), x.end());
  const auto n = static_cast<double>(x.size());
  double d = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    const double f = cdf(x[k]);
    d = std::max({d, f - static_cast<double>(k) / n, static_cast<double>(k + 1) / n - f});
  }
  return d;
}

}  // namespace rtf::test
