// Flood-fill reference of the cluster statistics (cluster_reference.hpp).
#include "core/reference/cluster_reference.hpp"

#include <algorithm>
#include <deque>
#include <stdexcept>

#include "core/reference/mask_graph_reference.hpp"

namespace rtf::reference {

namespace {

struct Labelling {
  std::vector<int64_t> cluster;  // per masked voxel: its cluster's number, -1 outside clusters
  std::vector<int64_t> extent;   // per cluster
  std::vector<double> mass;      // per cluster
};

Labelling label_clusters(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity,
                         const float* map, float threshold) {
  const MaskGraph graph(dims, mask, connectivity, "cluster reference");
  const auto above = [&](int64_t v) { return map[v] > threshold; };
  Labelling out;
  out.cluster.assign(graph.voxels(), -1);
  for (size_t seed = 0; seed < graph.voxels(); ++seed) {
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
      graph.for_each_neighbour(v, [&](int64_t n) {
        if (!above(n) || out.cluster[static_cast<size_t>(n)] >= 0) return;
        out.cluster[static_cast<size_t>(n)] = id;
        queue.push_back(n);
      });
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
