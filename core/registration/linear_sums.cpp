// LinearSums: NCC and best intensity from the sums, the kernel's flat layout.
#include "core/registration/linear_sums.hpp"

#include <cmath>
#include <stdexcept>

namespace rtf {

double LinearSums::ncc() const {
  if (count < 2) return 0.0;
  const double n = static_cast<double>(count);
  const double vf = sum_ff - sum_f * sum_f / n;
  const double vm = sum_mm - sum_m * sum_m / n;
  const double cov = sum_fm - sum_f * sum_m / n;
  if (!(vf > 0.0) || !(vm > 0.0)) return 0.0;
  return cov / std::sqrt(vf * vm);
}

std::pair<double, double> LinearSums::best_intensity() const {
  if (count < 2) return {1.0, 0.0};
  const double n = static_cast<double>(count);
  const double vm = sum_mm - sum_m * sum_m / n;
  if (!(vm > 0.0)) return {1.0, 0.0};
  const double s = (sum_fm - sum_f * sum_m / n) / vm;
  return {s, (sum_f - s * sum_m) / n};
}

LinearSums LinearSums::unpack(std::span<const double> terms) {
  if (terms.size() != static_cast<size_t>(kLinearSumTerms)) throw std::invalid_argument("linear sums: wrong size");
  LinearSums s;
  size_t k = 0;
  for (int a = 0; a < kLinearSumParams; ++a) {
    for (int b = a; b < kLinearSumParams; ++b) s.h(a, b) = s.h(b, a) = terms[k++];
  }
  for (int a = 0; a < kLinearSumParams; ++a) s.b[a] = terms[k++];
  s.sum_squared_residual = terms[k++];
  s.count = std::llround(terms[k++]);
  s.sum_f = terms[k++];
  s.sum_ff = terms[k++];
  s.sum_m = terms[k++];
  s.sum_mm = terms[k++];
  s.sum_fm = terms[k];
  return s;
}

void LinearSums::add_point(const Eigen::Matrix<double, kLinearSumParams, 1>& j, double r, double f, double m) {
  h += j * j.transpose();
  b += j * r;
  sum_squared_residual += r * r;
  ++count;
  sum_f += f;
  sum_ff += f * f;
  sum_m += m;
  sum_mm += m * m;
  sum_fm += f * m;
}

}  // namespace rtf
