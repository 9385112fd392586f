// Family-wise error corrected p values against the null distribution of a maximum (voxel statistic, cluster extent or
// mass, TFCE) and the null distributions as text: shared by `rtfmri randomise` and the first-level permutation test.
// docs/algorithms/randomise.md.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/io/atomic_file.hpp"

namespace rtf {

// 1 - p of each value against `null` (the largest value of each rearrangement, the identity included): p is the
// fraction of the null at or above the value, with a relative slack for sums that differ in rounding between the
// observed and the null computation (the identity's own maximum must count). Values <= 0 (no cluster, no
// enhancement) get 0, as randomise writes them.
template <typename T>
std::vector<double> fwe_one_minus_p(const std::vector<T>& values, std::vector<T> null, double slack) {
  std::sort(null.begin(), null.end());
  std::vector<double> out(values.size(), 0.0);
  for (size_t i = 0; i < values.size(); ++i) {
    if (!(values[i] > T{0})) continue;
    const T bound = static_cast<T>(static_cast<double>(values[i]) * (1.0 - slack));
    const auto at_or_above = null.end() - std::lower_bound(null.begin(), null.end(), bound);
    out[i] = 1.0 - static_cast<double>(at_or_above) / static_cast<double>(null.size());
  }
  return out;
}

// A null distribution as text, one value per line (9 significant digits), written atomically.
template <typename T>
void write_null_distribution(const std::string& path, const std::vector<T>& values) {
  std::string text;
  for (const T& v : values) text += fmt::format("{:.9g}\n", static_cast<double>(v));
  write_text_atomically(path, text);
}

}  // namespace rtf
