// Error norms between device output and a reference.
#include "tests/support/compare.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace rtf::test {
namespace {
template <typename Ref>
Difference compare_impl(std::span<const float> actual, std::span<const Ref> reference) {
  if (actual.size() != reference.size()) {
    throw std::invalid_argument(fmt::format("compare: sizes {} vs {}", actual.size(), reference.size()));
  }
  Difference d;
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i];
    const double r = static_cast<double>(reference[i]);
    if (!std::isfinite(a)) {
      ++d.non_finite;
      continue;
    }
    const double e = std::abs(a - r);
    if (e > d.max_abs) {
      d.max_abs = e;
      d.worst_index = static_cast<long long>(i);
    }
    num += e * e;
    den += r * r;
  }
  d.rel_l2 = den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
  return d;
}
}  // namespace

Difference compare(std::span<const float> actual, std::span<const double> reference) {
  return compare_impl(actual, reference);
}
Difference compare(std::span<const float> actual, std::span<const float> reference) {
  return compare_impl(actual, reference);
}

std::string describe(const Difference& d) {
  return fmt::format("max_abs={:.3g} rel_l2={:.3g} non_finite={} worst_index={}", d.max_abs, d.rel_l2, d.non_finite,
                     d.worst_index);
}

}  // namespace rtf::test
