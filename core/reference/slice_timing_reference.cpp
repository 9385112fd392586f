// Direct double-precision slice-timing interpolation (reference for the tap-table kernel).
#include "core/reference/slice_timing_reference.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace rtf::reference {
namespace {

double hann_sinc(double x, int half_width) {
  if (std::abs(x) >= half_width) return 0.0;
  if (x == std::round(x)) return x == 0.0 ? 1.0 : 0.0;
  return std::sin(std::numbers::pi * x) / (std::numbers::pi * x) * 0.5 *
         (1.0 + std::cos(std::numbers::pi * x / half_width));
}

double catmull_rom(double x) {
  const double a = std::abs(x);
  if (a < 1.0) return 1.5 * a * a * a - 2.5 * a * a + 1.0;
  if (a < 2.0) return -0.5 * a * a * a + 2.5 * a * a - 4.0 * a + 2.0;
  return 0.0;
}

double linear(double x) {
  return std::max(0.0, 1.0 - std::abs(x));
}

int64_t mirror(int64_t i, int64_t n) {
  if (n == 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
  return i;
}

}  // namespace

std::vector<double> slice_time_correct(std::span<const float> data, std::array<int64_t, 3> dims, int64_t nt,
                                       std::span<const double> slice_times_s, double ref_time_s, double tr_s,
                                       std::string_view method, int sinc_half_width) {
  double (*kernel)(double, int) = nullptr;
  int support = 0;
  if (method == "sinc") {
    kernel = hann_sinc;
    support = sinc_half_width;
  } else if (method == "cubic") {
    kernel = [](double x, int) { return catmull_rom(x); };
    support = 2;
  } else if (method == "linear") {
    kernel = [](double x, int) { return linear(x); };
    support = 1;
  } else {
    throw std::invalid_argument("reference slice timing: unknown method " + std::string(method));
  }
  const int64_t plane = dims[0] * dims[1];
  const int64_t nvox = plane * dims[2];
  std::vector<double> out(static_cast<size_t>(nvox * nt));
  for (int64_t v = 0; v < nvox; ++v) {
    const double shift = (ref_time_s - slice_times_s[static_cast<size_t>(v / plane)]) / tr_s;
    for (int64_t n = 0; n < nt; ++n) {
      const double p = static_cast<double>(n) + shift;
      double num = 0.0, den = 0.0;
      for (auto j = static_cast<int64_t>(std::floor(p)) - support; j <= static_cast<int64_t>(std::ceil(p)) + support;
           ++j) {
        const double w = kernel(p - static_cast<double>(j), sinc_half_width);
        num += w * data[static_cast<size_t>(mirror(j, nt) * nvox + v)];
        den += w;
      }
      out[static_cast<size_t>(n * nvox + v)] = num / den;
    }
  }
  return out;
}

}  // namespace rtf::reference
