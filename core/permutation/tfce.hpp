// Threshold-free cluster enhancement on the device (kernels/tfce.cl) for FSL randomise's -T (Smith & Nichols 2009,
// NeuroImage 44:83-98):
//
//   TFCE(v) = sum over k = 1, 2, ... of e(h_k, v)^E * h_k^H * dh,   h_k = k * dh rounded to float,
//
// where e(h, v) is the voxel count of the cluster (6-, 18- or 26-connected, masked voxels with t >= h) that holds v,
// and 0 when t(v) < h. Convention: a voxel counts at h when t >= h (FSL's inclusive binarise), so a voxel of t = 2
// with dh = 0.5 counts at h = 0.5, 1, 1.5 and 2. The thresholds run up to each map's maximum; a map's negative values
// (and those below dh) get 0: one-sided, for t > 0, as randomise. h_k is the float product float(k) * dh on host and
// device alike, so the same voxels cross the same thresholds everywhere. FSL's defaults: E = 0.5, H = 2, 26
// neighbours. dh is given per call; `rtfmri randomise -T` uses the observed map's maximum / 100 for every map.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/permutation/mask_neighbours.hpp"

namespace rtf {

class TfceStatistics {
 public:
  static constexpr double kDefaultE = 0.5;  // extent exponent
  static constexpr double kDefaultH = 2.0;  // height exponent
  // A map whose maximum exceeds this many thresholds (max / dh) is refused: dh is too small for it.
  static constexpr int kMaxThresholds = 10000;

  // `dims` (x, y, z) and `mask` (nonzero = inside, over the full grid, x fastest) fix the voxels; `connectivity` is 6,
  // 18 or 26; `max_batch` maps are enhanced per launch sequence. Throws std::invalid_argument for a connectivity other
  // than these, sizes that disagree, an empty mask, or the exponents (E, H) not finite and >= 0.
  TfceStatistics(Device& device, std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity,
                 int max_batch, double extent_exponent = kDefaultE, double height_exponent = kDefaultH);
  // The same from the neighbour table that neighbours() makes: made once, it serves every device of a job (a 2 mm
  // brain's took ~40 ms of each device's setup). Throws std::invalid_argument for a table of another set or layout.
  TfceStatistics(Device& device, const MaskNeighbours& neighbours, int max_batch, double extent_exponent = kDefaultE,
                 double height_exponent = kDefaultH);
  static MaskNeighbours neighbours(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity);

  // Per map, the largest TFCE over the mask (0 when no voxel reaches dh): the FWE null. `maps`: count (<= max_batch)
  // x V maps of the masked voxels (mask order: ascending full-grid index), already on the device. Throws
  // std::invalid_argument for sizes that disagree, dh not finite and > 0, or a map above kMaxThresholds * dh.
  std::vector<float> maxima(const DeviceBuffer<float>& maps, int count, float dh);
  // The same for maps from the host, max_batch at a time.
  std::vector<float> maxima(const std::vector<float>& maps, int count, float dh);
  // The TFCE of each masked voxel of one map (the observed statistic).
  std::vector<float> tfce(const std::vector<float>& map, float dh);

  size_t voxels() const { return voxels_; }  // V, the voxels in the mask
  int max_batch() const { return max_batch_; }
  double extent_exponent() const { return extent_exponent_; }  // E
  double height_exponent() const { return height_exponent_; }  // H

 private:
  // Enhances the first `count` maps of `maps`: TFCE per active position in acc_, each map's active count (voxels
  // >= dh) in active.
  void enhance(const DeviceBuffer<float>& maps, int count, float dh, std::vector<int32_t>& active);
  void check_dh(float dh) const;

  Device& device_;
  size_t voxels_ = 0;
  int max_batch_ = 0;
  double extent_exponent_ = kDefaultE, height_exponent_ = kDefaultH;
  size_t groups_ = 0;             // work-groups over V
  bool merge_per_voxel_ = false;  // CPU devices: merge loops over a voxel's neighbours (PER_VOXEL)
  ClKernel levels_, sort_, merge_, count_extents_, accumulate_, group_max_, map_max_;
  DeviceBuffer<int32_t> neighbours_;  // [V][K]
  DeviceBuffer<float> extent_power_;  // [V + 1]: e^E
  DeviceBuffer<float> maps_;          // [max_batch][V], for maps from the host
  DeviceBuffer<int32_t> level_, label_, order_;
  DeviceBuffer<uint32_t> size_;
  DeviceBuffer<float> acc_;       // [max_batch][V], by position
  DeviceBuffer<uint32_t> hist_;   // [kMaxThresholds + 2][max_batch]
  DeviceBuffer<int32_t> start_;   // [kMaxThresholds + 2][max_batch]
  DeviceBuffer<int32_t> top_;     // [max_batch]
  DeviceBuffer<float> part_max_;  // [max_batch][groups]
  DeviceBuffer<float> result_;    // [max_batch]
};

}  // namespace rtf
