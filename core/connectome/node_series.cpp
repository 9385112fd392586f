// Node series: gathering the mask's voxels, average ranks, centring and normalising in double.
#include "core/connectome/node_series.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace rtf {

std::vector<double> average_ranks(std::span<const double> x) {
  std::vector<size_t> order(x.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> ranks(x.size());
  for (size_t start = 0; start < order.size();) {
    size_t end = start + 1;
    while (end < order.size() && x[order[end]] == x[order[start]]) ++end;
    const double rank = 0.5 * static_cast<double>(start + 1 + end);  // mean of ranks start+1 .. end
    for (size_t k = start; k < end; ++k) ranks[order[k]] = rank;
    start = end;
  }
  return ranks;
}

NodeSeries node_series(const Image& bold, const std::vector<uint8_t>& mask, CorrelationMethod method) {
  const int64_t length = bold.nt();
  if (length < 3) {
    throw std::invalid_argument(fmt::format("a connectome needs a 4D series of at least 3 volumes, not {}", length));
  }
  const auto volume = static_cast<size_t>(bold.header().voxels_per_volume());
  if (mask.size() != volume) {
    throw std::invalid_argument(fmt::format("the mask has {} voxels, the series' volumes {}", mask.size(), volume));
  }
  NodeSeries s;
  s.length = length;
  s.padded = (length + 15) / 16 * 16;
  for (size_t v = 0; v < volume; ++v) {
    if (mask[v]) s.voxels.push_back(static_cast<int64_t>(v));
  }
  if (s.voxels.empty()) throw std::invalid_argument("the mask is empty: no nodes");
  const size_t n = s.voxels.size(), lp = static_cast<size_t>(s.padded);
  s.z.assign(n * lp, 0.0f);
  s.valid.assign(n, 0);
  std::vector<double> x(static_cast<size_t>(length));
  for (size_t node = 0; node < n; ++node) {
    for (int64_t t = 0; t < length; ++t) {
      x[static_cast<size_t>(t)] = bold.volume(t)[static_cast<size_t>(s.voxels[node])];
      if (!std::isfinite(x[static_cast<size_t>(t)])) {
        throw std::invalid_argument(fmt::format("voxel {} has a non-finite value at volume {}", s.voxels[node], t));
      }
    }
    if (method == CorrelationMethod::kSpearman) x = average_ranks(x);
    const double mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(length);
    double norm = 0.0;
    for (double& v : x) {
      v -= mean;
      norm += v * v;
    }
    norm = std::sqrt(norm);
    if (!(norm > 0.0)) continue;  // constant: invalid, z stays 0
    s.valid[node] = 1;
    for (int64_t t = 0; t < length; ++t) {
      s.z[node * lp + static_cast<size_t>(t)] = static_cast<float>(x[static_cast<size_t>(t)] / norm);
    }
  }
  return s;
}

}  // namespace rtf
