// Host side of TFCE (tfce.hpp): the neighbour table and e^E table, buffers sized once for max_batch maps, and per
// batch: levels, a read of each map's top level and of the level counts, a write of their prefix sums, sort, three
// launches per threshold (merge, count, accumulate) with no reads, and the maxima read in one copy.
#include "core/permutation/tfce.hpp"

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
constexpr int kLocalLevels = 256;  // LB: levels counted in local memory before the global atomics

}  // namespace

TfceStatistics::TfceStatistics(Device& device, std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask,
                               int connectivity, int max_batch, double extent_exponent, double height_exponent)
    : TfceStatistics(device, neighbours(dims, mask, connectivity), max_batch, extent_exponent, height_exponent) {}

MaskNeighbours TfceStatistics::neighbours(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask,
                                          int connectivity) {
  return mask_neighbours(dims, mask, connectivity, NeighbourSet::kAll, NeighbourLayout::kVoxelMajor, "TFCE");
}

TfceStatistics::TfceStatistics(Device& device, const MaskNeighbours& neighbours, int max_batch, double extent_exponent,
                               double height_exponent)
    : device_(device), max_batch_(max_batch), extent_exponent_(extent_exponent), height_exponent_(height_exponent) {
  if (max_batch < 1) throw std::invalid_argument(fmt::format("TFCE: max_batch {} must be >= 1", max_batch));
  if (!std::isfinite(extent_exponent) || !std::isfinite(height_exponent) || extent_exponent < 0.0 ||
      height_exponent < 0.0) {
    throw std::invalid_argument(
        fmt::format("TFCE: E = {} and H = {} must be finite and >= 0", extent_exponent, height_exponent));
  }
  if (neighbours.set != NeighbourSet::kAll || neighbours.layout != NeighbourLayout::kVoxelMajor ||
      neighbours.voxels == 0 || neighbours.table.size() != neighbours.voxels * neighbours.offsets) {
    throw std::invalid_argument("TFCE: a neighbour table not made by TfceStatistics::neighbours");
  }
  voxels_ = neighbours.voxels;
  const std::vector<int32_t>& table = neighbours.table;
  std::vector<float> power(voxels_ + 1);
  for (size_t e = 0; e <= voxels_; ++e)
    power[e] = static_cast<float>(std::pow(static_cast<double>(e), extent_exponent));

  groups_ = (voxels_ + kWorkGroup - 1) / kWorkGroup;
  std::vector<std::string> defines{fmt::format("K={}", neighbours.offsets), fmt::format("WG={}", kWorkGroup),
                                   fmt::format("MB={}", max_batch), fmt::format("KMAX={}", kMaxThresholds),
                                   fmt::format("LB={}", kLocalLevels)};
  merge_per_voxel_ = device.info().is_cpu();
  if (merge_per_voxel_) defines.emplace_back("PER_VOXEL");
  levels_ = device.kernel("tfce.cl", "tfce_levels", defines);
  sort_ = device.kernel("tfce.cl", "tfce_sort", defines);
  merge_ = device.kernel("tfce.cl", "tfce_merge", defines);
  count_extents_ = device.kernel("tfce.cl", "tfce_count", defines);
  accumulate_ = device.kernel("tfce.cl", "tfce_accumulate", defines);
  group_max_ = device.kernel("tfce.cl", "tfce_group_max", defines);
  map_max_ = device.kernel("tfce.cl", "tfce_map_max", defines);

  const cl_command_queue q = device.queue();
  const auto batch = static_cast<size_t>(max_batch);
  const size_t rows = static_cast<size_t>(kMaxThresholds) + 2;
  neighbours_ = DeviceBuffer<int32_t>(device, table.size(), CL_MEM_READ_ONLY);
  neighbours_.write(q, table);
  extent_power_ = DeviceBuffer<float>(device, power.size(), CL_MEM_READ_ONLY);
  extent_power_.write(q, power);
  maps_ = DeviceBuffer<float>(device, batch * voxels_, CL_MEM_READ_ONLY);
  level_ = DeviceBuffer<int32_t>(device, batch * voxels_);
  label_ = DeviceBuffer<int32_t>(device, batch * voxels_);
  order_ = DeviceBuffer<int32_t>(device, batch * voxels_);
  size_ = DeviceBuffer<uint32_t>(device, batch * voxels_);
  acc_ = DeviceBuffer<float>(device, batch * voxels_);
  hist_ = DeviceBuffer<uint32_t>(device, rows * batch);
  hist_.fill(q, 0);  // sort counts it back down to 0 after every batch
  start_ = DeviceBuffer<int32_t>(device, rows * batch, CL_MEM_READ_ONLY);
  top_ = DeviceBuffer<int32_t>(device, batch);
  part_max_ = DeviceBuffer<float>(device, batch * groups_);
  result_ = DeviceBuffer<float>(device, batch);
}

void TfceStatistics::check_dh(float dh) const {
  if (!std::isfinite(dh) || !(dh > 0.0f)) {
    throw std::invalid_argument(fmt::format("TFCE: dh = {} must be finite and > 0", dh));
  }
}

void TfceStatistics::enhance(const DeviceBuffer<float>& maps, int count, float dh, std::vector<int32_t>& active) {
  const cl_command_queue q = device_.queue();
  const int v = static_cast<int>(voxels_);
  const auto batch = static_cast<size_t>(max_batch_), n = static_cast<size_t>(count);
  const std::array<size_t, 2> local{kWorkGroup, 1};
  const size_t per_entering = merge_per_voxel_ ? 1 : neighbours_.size() / voxels_;  // merge's items per voxel
  const int32_t zero = 0;
  RTF_CL_CHECK(clEnqueueFillBuffer(q, top_.get(), &zero, sizeof(zero), 0, top_.bytes(), 0, nullptr, nullptr));
  set_args(levels_, maps, v, dh, level_, label_, size_, hist_, top_);
  launch<2>(q, levels_, {voxels_, n}, local, {}, EventMode::kNone);

  // Round trips 1 and 2: the highest level of the batch, then the voxels per (level, map) up to it.
  std::vector<int32_t> top(n);
  top_.read(q, top);
  const int levels = *std::max_element(top.begin(), top.end());
  if (levels > kMaxThresholds) {
    hist_.fill(q, 0);
    const auto b = static_cast<size_t>(std::max_element(top.begin(), top.end()) - top.begin());
    throw std::invalid_argument(
        fmt::format("TFCE: map {} of the batch exceeds {} thresholds of dh = {}", b, kMaxThresholds, dh));
  }
  active.assign(n, 0);
  if (levels == 0) return;  // no voxel reaches dh: every TFCE is 0
  const auto rows = static_cast<size_t>(levels) + 2;
  std::vector<uint32_t> hist(rows * batch);
  hist_.read(q, hist);
  // start[k][b] = voxels of map b at level >= k (row 0 unused, row levels + 1 = 0).
  std::vector<int32_t> start(rows * batch, 0);
  std::vector<size_t> entering(rows, 0), actives(rows, 0);  // per level, over the maps: the largest counts
  for (size_t k = static_cast<size_t>(levels); k >= 1; --k) {
    for (size_t b = 0; b < n; ++b) {
      start[k * batch + b] = start[(k + 1) * batch + b] + static_cast<int32_t>(hist[k * batch + b]);
      entering[k] = std::max<size_t>(entering[k], hist[k * batch + b]);
      actives[k] = std::max<size_t>(actives[k], static_cast<size_t>(start[k * batch + b]));
    }
  }
  for (size_t b = 0; b < n; ++b) active[b] = start[batch + b];
  start_.write(q, start);
  set_args(sort_, level_, v, start_, hist_, order_, acc_);
  launch<2>(q, sort_, {voxels_, n}, local, {}, EventMode::kNone);

  // From the top threshold down: only the entering (merge, count) and active (count, accumulate) positions.
  for (int k = levels; k >= 1; --k) {
    const auto kk = static_cast<size_t>(k);
    const float h = static_cast<float>(k) * dh;  // as level_of in the kernel
    const auto weight =
        static_cast<float>(std::pow(static_cast<double>(h), height_exponent_) * static_cast<double>(dh));
    if (entering[kk] > 0) {
      set_args(merge_, order_, level_, neighbours_, v, start_, k, label_);
      launch<2>(q, merge_, {entering[kk] * per_entering, n}, local, {}, EventMode::kNone);
      set_args(count_extents_, order_, v, start_, k, label_, size_);
      launch<2>(q, count_extents_, {actives[kk], n}, local, {}, EventMode::kNone);
    }
    set_args(accumulate_, order_, v, start_, k, weight, extent_power_, label_, size_, acc_);
    launch<2>(q, accumulate_, {actives[kk], n}, local, {}, EventMode::kNone);
  }
}

std::vector<float> TfceStatistics::maxima(const DeviceBuffer<float>& maps, int count, float dh) {
  check_dh(dh);
  if (count < 0 || count > max_batch_ || maps.size() < static_cast<size_t>(count) * voxels_) {
    throw std::invalid_argument(fmt::format("TFCE: {} maps of {} voxels in a buffer of {} (at most {} maps)", count,
                                            voxels_, maps.size(), max_batch_));
  }
  if (count == 0) return {};
  std::vector<int32_t> active;
  enhance(maps, count, dh, active);
  std::vector<float> result(static_cast<size_t>(count), 0.0f);
  const size_t longest = static_cast<size_t>(*std::max_element(active.begin(), active.end()));
  if (longest == 0) return result;
  const cl_command_queue q = device_.queue();
  const size_t groups = (longest + kWorkGroup - 1) / kWorkGroup;
  set_args(group_max_, acc_, static_cast<int>(voxels_), start_, part_max_);
  launch<2>(q, group_max_, {longest, static_cast<size_t>(count)}, {kWorkGroup, 1}, {}, EventMode::kNone);
  set_args(map_max_, part_max_, static_cast<int>(groups), result_);
  launch<1>(q, map_max_, {static_cast<size_t>(count) * kWorkGroup}, {kWorkGroup}, {}, EventMode::kNone);
  result_.read(q, result);  // round trip 3
  return result;
}

std::vector<float> TfceStatistics::maxima(const std::vector<float>& maps, int count, float dh) {
  check_dh(dh);
  if (count < 0 || maps.size() != static_cast<size_t>(count) * voxels_) {
    throw std::invalid_argument(
        fmt::format("TFCE: {} values for {} maps of {} masked voxels", maps.size(), count, voxels_));
  }
  std::vector<float> result;
  for (int first = 0; first < count; first += max_batch_) {
    const int n = std::min(max_batch_, count - first);
    maps_.write(device_.queue(), std::span<const float>(maps.data() + static_cast<size_t>(first) * voxels_,
                                                        static_cast<size_t>(n) * voxels_));
    const std::vector<float> part = maxima(maps_, n, dh);
    result.insert(result.end(), part.begin(), part.end());
  }
  return result;
}

std::vector<float> TfceStatistics::tfce(const std::vector<float>& map, float dh) {
  check_dh(dh);
  if (map.size() != voxels_) {
    throw std::invalid_argument(fmt::format("TFCE: a map of {} values for {} masked voxels", map.size(), voxels_));
  }
  const cl_command_queue q = device_.queue();
  maps_.write(q, map);
  std::vector<int32_t> active;
  enhance(maps_, 1, dh, active);
  std::vector<float> out(voxels_, 0.0f);
  const auto listed = static_cast<size_t>(active[0]);
  if (listed == 0) return out;
  std::vector<int32_t> order(listed);
  std::vector<float> value(listed);
  order_.read(q, order);
  acc_.read(q, value);
  for (size_t p = 0; p < listed; ++p) out[static_cast<size_t>(order[p])] = value[p];
  return out;
}

}  // namespace rtf
