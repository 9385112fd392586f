// Flood-fill reference of TFCE (tfce_reference.hpp).
#include "core/reference/tfce_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <stdexcept>

namespace rtf::reference {

std::vector<double> tfce(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity,
                         const std::vector<float>& map, float dh, double E, double H) {
  if (connectivity != 6 && connectivity != 18 && connectivity != 26) {
    throw std::invalid_argument("TFCE reference: connectivity must be 6, 18 or 26");
  }
  if (!std::isfinite(dh) || !(dh > 0.0f)) throw std::invalid_argument("TFCE reference: dh must be finite and > 0");
  const auto [nx, ny, nz] = dims;
  if (mask.size() != static_cast<size_t>(nx * ny * nz)) throw std::invalid_argument("TFCE reference: mask size");
  const int reach = connectivity == 6 ? 1 : connectivity == 18 ? 2 : 3;  // largest |dx| + |dy| + |dz|
  std::vector<int64_t> masked(mask.size(), -1);                          // full grid -> mask index
  std::vector<int64_t> full;                                             // mask index -> full grid
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i] != 0) {
      masked[i] = static_cast<int64_t>(full.size());
      full.push_back(static_cast<int64_t>(i));
    }
  }
  if (map.size() != full.size()) throw std::invalid_argument("TFCE reference: map size");
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
        const int64_t i = full[static_cast<size_t>(v)];
        const int64_t x = i % nx, y = (i / nx) % ny, z = i / (nx * ny);
        for (int dz = -1; dz <= 1; ++dz) {
          for (int dy = -1; dy <= 1; ++dy) {
            for (int dx = -1; dx <= 1; ++dx) {
              const int steps = std::abs(dx) + std::abs(dy) + std::abs(dz);
              if (steps == 0 || steps > reach) continue;
              const int64_t a = x + dx, b = y + dy, c = z + dz;
              if (a < 0 || b < 0 || c < 0 || a >= nx || b >= ny || c >= nz) continue;
              const int64_t n = masked[static_cast<size_t>(a + nx * (b + ny * c))];
              if (n < 0 || !(map[static_cast<size_t>(n)] >= h) || cluster[static_cast<size_t>(n)] >= 0) continue;
              cluster[static_cast<size_t>(n)] = static_cast<int64_t>(seed);
              members.push_back(n);
              queue.push_back(n);
            }
          }
        }
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
