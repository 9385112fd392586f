// Carpet voxels chosen on the host once.
#include "core/qa/carpet_column.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace rtf {

namespace {

// `take` of `from`, evenly spread (every from.size() / take-th, starting half a step in).
void take_evenly(const std::vector<int>& from, int64_t take, std::vector<int>& out) {
  const auto n = static_cast<int64_t>(from.size());
  take = std::min(take, n);
  for (int64_t i = 0; i < take; ++i) {
    const int64_t k = (2 * i + 1) * n / (2 * take);
    out.push_back(from[static_cast<size_t>(k)]);
  }
}

}  // namespace

CarpetVoxels carpet_voxels(std::span<const uint8_t> mask, int64_t rows, std::span<const uint8_t> preferred) {
  if (!preferred.empty() && preferred.size() != mask.size()) {
    throw std::invalid_argument(
        fmt::format("carpet_voxels: a preferred set of {} voxels for a mask of {}", preferred.size(), mask.size()));
  }
  std::vector<int> first, rest;
  for (size_t v = 0; v < mask.size(); ++v) {
    if (mask[v] == 0) continue;
    (!preferred.empty() && preferred[v] != 0 ? first : rest).push_back(static_cast<int>(v));
  }
  CarpetVoxels out;
  const auto total = static_cast<int64_t>(first.size() + rest.size());
  if (rows <= 0 || total == 0) return out;
  int64_t take_first = first.empty() ? 0 : std::max<int64_t>(1, rows * static_cast<int64_t>(first.size()) / total);
  if (!rest.empty() && take_first >= rows && rows > 1) take_first = rows - 1;
  take_first = std::min<int64_t>(take_first, static_cast<int64_t>(first.size()));
  take_evenly(first, take_first, out.indices);
  out.split = first.empty() ? 0 : static_cast<int64_t>(out.indices.size());
  take_evenly(rest, rows - static_cast<int64_t>(out.indices.size()), out.indices);
  return out;
}

}  // namespace rtf
