// Host side of the cluster statistics (clusters.hpp): the neighbour table, the buffers sized once for max_batch maps,
// and per batch five launches (init, merge, resolve, group maxima, map maxima) and one read of the maxima.
#include "core/permutation/clusters.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "core/device/launch.hpp"
#include "core/permutation/mask_neighbours.hpp"

namespace rtf {

namespace {

constexpr size_t kWorkGroup = 128;
constexpr double kFixedScale = 16777216.0;  // 2^24, as FIXED_SCALE in the kernel

}  // namespace

ClusterStatistics::ClusterStatistics(Device& device, std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask,
                                     int connectivity, int max_batch)
    : ClusterStatistics(device, neighbours(dims, mask, connectivity), max_batch) {}

MaskNeighbours ClusterStatistics::neighbours(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask,
                                             int connectivity) {
  return mask_neighbours(dims, mask, connectivity, NeighbourSet::kPreceding, NeighbourLayout::kNeighbourMajor,
                         "clusters");
}

ClusterStatistics::ClusterStatistics(Device& device, const MaskNeighbours& neighbours, int max_batch)
    : device_(device), max_batch_(max_batch) {
  if (max_batch < 1) throw std::invalid_argument(fmt::format("clusters: max_batch {} must be >= 1", max_batch));
  if (neighbours.set != NeighbourSet::kPreceding || neighbours.layout != NeighbourLayout::kNeighbourMajor ||
      neighbours.voxels == 0 || neighbours.table.size() != neighbours.voxels * neighbours.offsets) {
    throw std::invalid_argument("clusters: a neighbour table not made by ClusterStatistics::neighbours");
  }
  voxels_ = neighbours.voxels;
  const std::vector<int32_t>& table = neighbours.table;

  groups_ = (voxels_ + kWorkGroup - 1) / kWorkGroup;
  // Each voxel adds at most 2^63 / V in fixed point, so that a sum over all V voxels stays below 2^63.
  cap_ = static_cast<float>(std::ldexp(1.0, 39) / static_cast<double>(voxels_));
  const std::vector<std::string> defines{fmt::format("K={}", neighbours.offsets), fmt::format("WG={}", kWorkGroup)};
  init_ = device.kernel("connected_components.cl", "cluster_init", defines);
  merge_ = device.kernel("connected_components.cl", "cluster_merge", defines);
  resolve_ = device.kernel("connected_components.cl", "cluster_resolve", defines);
  group_max_ = device.kernel("connected_components.cl", "cluster_group_max", defines);
  map_max_ = device.kernel("connected_components.cl", "cluster_map_max", defines);

  const auto batch = static_cast<size_t>(max_batch);
  neighbours_ = DeviceBuffer<int32_t>(device, table.size(), CL_MEM_READ_ONLY);
  neighbours_.write(device.queue(), table);
  maps_ = DeviceBuffer<float>(device, batch * voxels_, CL_MEM_READ_ONLY);
  labels_ = DeviceBuffer<int32_t>(device, batch * voxels_);
  size_ = DeviceBuffer<uint32_t>(device, batch * voxels_);
  mass_lo_ = DeviceBuffer<uint32_t>(device, batch * voxels_);
  mass_hi_ = DeviceBuffer<uint32_t>(device, batch * voxels_);
  part_size_ = DeviceBuffer<uint32_t>(device, batch * groups_);
  part_mass_ = DeviceBuffer<uint64_t>(device, batch * groups_);
  result_ = DeviceBuffer<uint64_t>(device, batch * 2);
}

void ClusterStatistics::check_threshold(float threshold) const {
  if (!std::isfinite(threshold)) throw std::invalid_argument(fmt::format("clusters: threshold {}", threshold));
}

void ClusterStatistics::label(const DeviceBuffer<float>& maps, int count, float threshold) {
  const cl_command_queue q = device_.queue();
  const int v = static_cast<int>(voxels_);
  const std::array<size_t, 2> global{voxels_, static_cast<size_t>(count)}, local{kWorkGroup, 1};
  set_args(init_, maps, v, threshold, labels_, size_, mass_lo_, mass_hi_);
  launch<2>(q, init_, global, local, {}, EventMode::kNone);
  set_args(merge_, maps, neighbours_, v, threshold, labels_);
  launch<2>(q, merge_, global, local, {}, EventMode::kNone);
  set_args(resolve_, maps, v, threshold, cap_, labels_, size_, mass_lo_, mass_hi_);
  launch<2>(q, resolve_, global, local, {}, EventMode::kNone);
}

ClusterMaxima ClusterStatistics::maxima(const DeviceBuffer<float>& maps, int count, float threshold) {
  check_threshold(threshold);
  if (count < 0 || count > max_batch_ || maps.size() < static_cast<size_t>(count) * voxels_) {
    throw std::invalid_argument(fmt::format("clusters: {} maps of {} voxels in a buffer of {} (at most {} maps)", count,
                                            voxels_, maps.size(), max_batch_));
  }
  ClusterMaxima result;
  if (count == 0) return result;
  label(maps, count, threshold);
  const cl_command_queue q = device_.queue();
  const int v = static_cast<int>(voxels_), groups = static_cast<int>(groups_);
  set_args(group_max_, size_, mass_lo_, mass_hi_, v, part_size_, part_mass_);
  launch<2>(q, group_max_, {voxels_, static_cast<size_t>(count)}, {kWorkGroup, 1}, {}, EventMode::kNone);
  set_args(map_max_, part_size_, part_mass_, groups, result_);
  launch<1>(q, map_max_, {static_cast<size_t>(count) * kWorkGroup}, {kWorkGroup}, {}, EventMode::kNone);
  std::vector<uint64_t> values(static_cast<size_t>(count) * 2);
  result_.read(q, values);
  result.extent.resize(static_cast<size_t>(count));
  result.mass.resize(static_cast<size_t>(count));
  for (size_t b = 0; b < result.extent.size(); ++b) {
    result.extent[b] = static_cast<int64_t>(values[2 * b]);
    result.mass[b] = static_cast<double>(values[2 * b + 1]) / kFixedScale;
  }
  return result;
}

ClusterMaxima ClusterStatistics::maxima(const std::vector<float>& maps, int count, float threshold) {
  check_threshold(threshold);
  if (count < 0 || maps.size() != static_cast<size_t>(count) * voxels_) {
    throw std::invalid_argument(
        fmt::format("clusters: {} values for {} maps of {} masked voxels", maps.size(), count, voxels_));
  }
  ClusterMaxima result;
  for (int first = 0; first < count; first += max_batch_) {
    const int n = std::min(max_batch_, count - first);
    maps_.write(device_.queue(), std::span<const float>(maps.data() + static_cast<size_t>(first) * voxels_,
                                                        static_cast<size_t>(n) * voxels_));
    ClusterMaxima part = maxima(maps_, n, threshold);
    result.extent.insert(result.extent.end(), part.extent.begin(), part.extent.end());
    result.mass.insert(result.mass.end(), part.mass.begin(), part.mass.end());
  }
  return result;
}

ObservedClusters ClusterStatistics::observed(const std::vector<float>& map, float threshold) {
  check_threshold(threshold);
  if (map.size() != voxels_) {
    throw std::invalid_argument(fmt::format("clusters: a map of {} values for {} masked voxels", map.size(), voxels_));
  }
  const cl_command_queue q = device_.queue();
  maps_.write(q, map);
  label(maps_, 1, threshold);
  std::vector<int32_t> roots(voxels_);
  std::vector<uint32_t> size(voxels_), lo(voxels_), hi(voxels_);
  labels_.read(q, roots);
  size_.read(q, size);
  mass_lo_.read(q, lo);
  mass_hi_.read(q, hi);
  ObservedClusters result;
  result.extent.assign(voxels_, 0);
  result.mass.assign(voxels_, 0.0);
  for (size_t v = 0; v < voxels_; ++v) {
    if (roots[v] < 0) continue;
    const auto r = static_cast<size_t>(roots[v]);
    if (r == v) ++result.clusters;
    result.extent[v] = size[r];
    result.mass[v] = static_cast<double>((static_cast<uint64_t>(hi[r]) << 32) | lo[r]) / kFixedScale;
  }
  return result;
}

}  // namespace rtf
