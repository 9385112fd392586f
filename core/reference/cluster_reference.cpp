// Flood-fill reference of the cluster statistics (cluster_reference.hpp).
#include "core/reference/cluster_reference.hpp"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <stdexcept>

namespace rtf::reference {

namespace {

struct Labelling {
  std::vector<int64_t> cluster;  // per masked voxel: its cluster's number, -1 outside clusters
  std::vector<int64_t> extent;   // per cluster
  std::vector<double> mass;      // per cluster
};

Labelling label_clusters(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity,
                         const float* map, float threshold) {
  if (connectivity != 6 && connectivity != 18 && connectivity != 26) {
    throw std::invalid_argument("cluster reference: connectivity must be 6, 18 or 26");
  }
  const auto [nx, ny, nz] = dims;
  if (mask.size() != static_cast<size_t>(nx * ny * nz)) throw std::invalid_argument("cluster reference: mask size");
  const int reach = connectivity == 6 ? 1 : connectivity == 18 ? 2 : 3;  // largest |dx| + |dy| + |dz|
  std::vector<int64_t> masked(mask.size(), -1);                          // full grid -> mask index
  std::vector<int64_t> full;                                             // mask index -> full grid
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i] != 0) {
      masked[i] = static_cast<int64_t>(full.size());
      full.push_back(static_cast<int64_t>(i));
    }
  }
  const auto above = [&](int64_t v) { return map[v] > threshold; };
  Labelling out;
  out.cluster.assign(full.size(), -1);
  for (size_t seed = 0; seed < full.size(); ++seed) {
    if (!above(static_cast<int64_t>(seed)) || out.cluster[seed] >= 0) continue;
    const auto id = static_cast<int64_t>(out.extent.size());
    out.extent.push_back(0);
    out.mass.push_back(0.0);
    std::deque<int64_t> queue{static_cast<int64_t>(seed)};
    out.cluster[seed] = id;
    while (!queue.empty()) {
      const int64_t v = queue.front();
      queue.pop_front();
      out.extent.back() += 1;
      out.mass.back() += static_cast<double>(map[v]) - static_cast<double>(threshold);
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
            if (n < 0 || !above(n) || out.cluster[static_cast<size_t>(n)] >= 0) continue;
            out.cluster[static_cast<size_t>(n)] = id;
            queue.push_back(n);
          }
        }
      }
    }
  }
  return out;
}

size_t mask_voxels(const std::vector<uint8_t>& mask) {
  return static_cast<size_t>(std::count_if(mask.begin(), mask.end(), [](uint8_t m) { return m != 0; }));
}

}  // namespace

ClusterMaxima cluster_maxima(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity,
                             const std::vector<float>& maps, int count, float threshold) {
  const size_t voxels = mask_voxels(mask);
  if (count < 0 || maps.size() != static_cast<size_t>(count) * voxels) {
    throw std::invalid_argument("cluster reference: maps size");
  }
  ClusterMaxima result;
  for (int b = 0; b < count; ++b) {
    const Labelling l =
        label_clusters(dims, mask, connectivity, maps.data() + static_cast<size_t>(b) * voxels, threshold);
    result.extent.push_back(l.extent.empty() ? 0 : *std::max_element(l.extent.begin(), l.extent.end()));
    result.mass.push_back(l.mass.empty() ? 0.0 : *std::max_element(l.mass.begin(), l.mass.end()));
  }
  return result;
}

ObservedClusters observed_clusters(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity,
                                   const std::vector<float>& map, float threshold) {
  if (map.size() != mask_voxels(mask)) throw std::invalid_argument("cluster reference: map size");
  const Labelling l = label_clusters(dims, mask, connectivity, map.data(), threshold);
  ObservedClusters result;
  result.clusters = static_cast<int64_t>(l.extent.size());
  result.extent.assign(map.size(), 0);
  result.mass.assign(map.size(), 0.0);
  for (size_t v = 0; v < map.size(); ++v) {
    if (l.cluster[v] < 0) continue;
    result.extent[v] = l.extent[static_cast<size_t>(l.cluster[v])];
    result.mass[v] = l.mass[static_cast<size_t>(l.cluster[v])];
  }
  return result;
}

}  // namespace rtf::reference
