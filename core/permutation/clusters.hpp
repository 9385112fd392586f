// Cluster statistics on the device (kernels/connected_components.cl) for FSL randomise's cluster-extent (-c) and
// cluster-mass (-C) inference: clusters are the connected components (6, 18 or 26 neighbours; randomise uses 26) of
// the masked voxels whose statistic is > a cluster-forming threshold; a cluster's extent is its voxel count and its
// mass the sum of (t - threshold) over its voxels. For a batch of maps (one per rearrangement), each map's largest
// extent and largest mass; for the observed map, each voxel's cluster extent and mass.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/permutation/mask_neighbours.hpp"

namespace rtf {

struct ClusterMaxima {
  std::vector<int64_t> extent;  // per map: the largest cluster's voxel count (0 when no voxel is above the threshold)
  std::vector<double> mass;     // per map: the largest cluster mass (0 likewise); may belong to another cluster
};

struct ObservedClusters {
  std::vector<int64_t> extent;  // per masked voxel: the extent of its cluster, 0 outside clusters
  std::vector<double> mass;     // per masked voxel: the mass of its cluster, 0 outside clusters
  int64_t clusters = 0;         // how many clusters
};

class ClusterStatistics {
 public:
  // `dims` (x, y, z) and `mask` (nonzero = inside, over the full grid, x fastest) fix the voxels; `connectivity` is 6
  // (faces), 18 (and edges) or 26 (and corners); `max_batch` maps are labelled per launch. Throws
  // std::invalid_argument for a connectivity other than these, sizes that disagree, or an empty mask.
  ClusterStatistics(Device& device, std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity,
                    int max_batch);
  // The same from the neighbour table that neighbours() makes: made once, it serves every device of a job (a 2 mm
  // brain's took ~20 ms of each device's setup). Throws std::invalid_argument for a table of another set or layout.
  ClusterStatistics(Device& device, const MaskNeighbours& neighbours, int max_batch);
  static MaskNeighbours neighbours(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity);

  // `maps`: `count` maps of the masked voxels (count x V, mask order: ascending full-grid index). Maps beyond
  // max_batch are done max_batch at a time. Throws std::invalid_argument for sizes that disagree or a threshold that is
  // not finite.
  ClusterMaxima maxima(const std::vector<float>& maps, int count, float threshold);
  // The same for maps already on the device: count (<= max_batch) x V, as above.
  ClusterMaxima maxima(const DeviceBuffer<float>& maps, int count, float threshold);
  // `map`: one map of the masked voxels.
  ObservedClusters observed(const std::vector<float>& map, float threshold);

  size_t voxels() const { return voxels_; }  // V, the voxels in the mask
  int max_batch() const { return max_batch_; }

 private:
  // Labels the first `count` maps of `maps` and sums each cluster's extent and mass at its root.
  void label(const DeviceBuffer<float>& maps, int count, float threshold);
  void check_threshold(float threshold) const;

  Device& device_;
  size_t voxels_ = 0;
  int max_batch_ = 0;
  size_t groups_ = 0;  // work-groups over V
  float cap_ = 0.0f;   // the largest (t - threshold) one voxel adds to a mass (so that no sum overflows)
  ClKernel init_, merge_, resolve_, group_max_, map_max_;
  DeviceBuffer<int32_t> neighbours_;  // [K][V]
  DeviceBuffer<float> maps_;          // [max_batch][V], for maps from the host
  DeviceBuffer<int32_t> labels_;
  DeviceBuffer<uint32_t> size_, mass_lo_, mass_hi_;  // [max_batch][V]
  DeviceBuffer<uint32_t> part_size_;                 // [max_batch][groups]
  DeviceBuffer<uint64_t> part_mass_;                 // [max_batch][groups]
  DeviceBuffer<uint64_t> result_;                    // [max_batch][2]: largest extent, largest fixed-point mass
};

}  // namespace rtf
