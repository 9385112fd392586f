// DeviceQualityIndex: AFNI 3dTqual's quality index of a volume, 1 - Spearman's rank correlation with a reference volume
// (the run's voxel-wise median volume, DeviceOutlierCount::medians) over a mask, on the device and exact: average ranks
// of tied values as integers (a bitonic sort, then each value's first and last place), integer sums
// (kernels/rank_correlation.cl). docs/algorithms/qa.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"

namespace rtf {

class DeviceQualityIndex {
 public:
  // `mask`: one byte per voxel (non-zero: inside).
  DeviceQualityIndex(Device& device, std::span<const uint8_t> mask);

  // The volume the others are compared with (at least the mask's voxels); its ranks are kept.
  void set_reference(const DeviceBuffer<float>& reference);
  // 1 - Spearman's rho of `volume` and the reference over the mask: 0 for a volume ranked as the reference, up to 2;
  // 1 for a constant volume (correlation 0, as AFNI's 3dTqual). NaN when the volume or the reference has a non-finite
  // value in the mask, the reference is constant there, or the mask has fewer than 2 voxels.
  double quality(const DeviceBuffer<float>& volume);

  int64_t mask_voxels() const { return count_; }

 private:
  static constexpr int kLocalSize = 256;
  static constexpr int kGroups = 64;
  // Ranks of `volume`'s masked values into `ranks`; false when one of them is not finite.
  bool rank(const DeviceBuffer<float>& volume, DeviceBuffer<int>& ranks);

  Device& device_;
  int64_t voxels_;
  int count_ = 0;
  int padded_ = 1;
  bool reference_set_ = false, reference_finite_ = false;
  ClKernel gather_, bitonic_, ranks_kernel_, sums_;
  DeviceBuffer<int> masked_, bad_, reference_ranks_, volume_ranks_;
  DeviceBuffer<float> values_, sorted_;
  DeviceBuffer<int64_t> partials_;
};

}  // namespace rtf
