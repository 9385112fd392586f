// Comparison helpers for device-vs-reference tests: error norms and "every element written".
#pragma once

#include <cmath>
#include <span>
#include <string>

namespace rtf::test {

struct Difference {
  double max_abs = 0.0;      // max |a - b|
  double rel_l2 = 0.0;       // ||a - b|| / ||b||
  long long non_finite = 0;  // elements of `a` that are NaN/inf (e.g. poison left behind)
  long long worst_index = -1;
};

Difference compare(std::span<const float> actual, std::span<const double> reference);
Difference compare(std::span<const float> actual, std::span<const float> reference);
std::string describe(const Difference& d);

}  // namespace rtf::test
