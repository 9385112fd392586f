// Flood-fill reference of TFCE (tfce_reference.hpp).
#include "core/reference/tfce_reference.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <stdexcept>

#include "core/reference/mask_graph_reference.hpp"

namespace rtf::reference {

std::vector<double> tfce(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity,
                         const std::vector<float>& map, float dh, double E, double H) {
  if (!std::isfinite(dh) || !(dh > 0.0f)) throw std::invalid_argument("TFCE reference: dh must be finite and > 0");
  const MaskGraph graph(dims, mask, connectivity, "TFCE reference");
  if (map.size() != graph.voxels()) throw std::invalid_argument("TFCE reference: map size");
  std::vector<double> out(map.size(), 0.0);
  if (map.empty()) return out;
  const float top = *std::max_element(map.begin(), map.end());
  if (!std::isfinite(top)) throw std::invalid_argument("TFCE reference: the map's maximum is not finite");

  std::vector<int64_t> cluster(map.size());
  std::vector<int64_t> members;
  for (int64_t k = 1;; ++k) {
    const float h = static_cast<float>(k) * dh;  // the device's thresholds, the same floats
    if (!(h <= top)) break;
    const double weight = std::pow(static_cast<double>(h), H) * static_cast<double>(dh);
    std::fill(cluster.begin(), cluster.end(), -1);
    for (size_t seed = 0; seed < map.size(); ++seed) {
      if (!(map[seed] >= h) || cluster[seed] >= 0) continue;
      // One cluster: flood fill from the seed, then every member adds extent^E * weight.
      members.assign(1, static_cast<int64_t>(seed));
      cluster[seed] = static_cast<int64_t>(seed);
      std::deque<int64_t> queue{static_cast<int64_t>(seed)};
      while (!queue.empty()) {
        const int64_t v = queue.front();
        queue.pop_front();
        graph.for_each_neighbour(v, [&](int64_t n) {
          if (!(map[static_cast<size_t>(n)] >= h) || cluster[static_cast<size_t>(n)] >= 0) return;
          cluster[static_cast<size_t>(n)] = static_cast<int64_t>(seed);
          members.push_back(n);
          queue.push_back(n);
        });
      }
      const double add = std::pow(static_cast<double>(members.size()), E) * weight;
      for (const int64_t m : members) out[static_cast<size_t>(m)] += add;
    }
  }
  return out;
}

std::vector<double> tfce_maxima(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity,
                                const std::vector<float>& maps, int count, float dh, double E, double H) {
  const auto voxels = static_cast<size_t>(std::count_if(mask.begin(), mask.end(), [](uint8_t m) { return m != 0; }));
  if (count < 0 || maps.size() != static_cast<size_t>(count) * voxels) {
    throw std::invalid_argument("TFCE reference: maps size");
  }
  std::vector<double> result;
  for (int b = 0; b < count; ++b) {
    const auto first = maps.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(b) * voxels);
    const std::vector<double> t = tfce(
        dims, mask, connectivity, std::vector<float>(first, first + static_cast<std::ptrdiff_t>(voxels)), dh, E, H);
    result.push_back(t.empty() ? 0.0 : std::max(0.0, *std::max_element(t.begin(), t.end())));
  }
  return result;
}

}  // namespace rtf::reference
