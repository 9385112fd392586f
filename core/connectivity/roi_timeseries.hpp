// RoiTimeseries: the mean of each region (ROI) per volume on the device, a per-label reduction
// (kernels/connectivity_roi_means.cl). Serves ROI x ROI connectivity (an atlas's regions) and seed maps (a seed is one
// region). The regions are given once as each voxel's region index; the constructor builds the region member lists
// (CSR) and allocates everything, including the means table [slot][region] with one row per slot of the data buffer,
// so that enqueue() allocates nothing. docs/algorithms/connectivity.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/device/kernel_profile.hpp"

namespace rtf {

class RoiTimeseries {
 public:
  // `roi_of_voxel`: one entry per voxel of the grid (x fastest): the voxel's region in [0, num_rois), or -1. `slots`:
  // volumes the data buffers hold (a ring's capacity, or a series' length), one row of means() each. Regions may be
  // empty (their means are NaN). `local_size`: work-items per region, a power of two; 0 chooses (128 on GPUs, 1 on CPU
  // devices); tests force either path. Throws std::invalid_argument for an entry out of range or no region.
  RoiTimeseries(Device& device, std::span<const int32_t> roi_of_voxel, int64_t num_rois, int64_t slots,
                size_t local_size = 0);

  // Enqueues the means of every region over the finite voxels of the volume in `slot` of `data` ([slot][voxel]
  // floats) into row `slot` of means(), as (hi, lo) float pairs whose sum is the mean to ~1e-10 relative; hi is NaN for
  // a region without a finite voxel. Returns the kernel's event.
  ClEvent enqueue(const DeviceBuffer<float>& data, int64_t slot);

  // Blocking read of row `slot` of the means table into `out` (num_rois values, hi + lo in double).
  void read(int64_t slot, std::span<double> out) const;

  const DeviceBuffer<cl_float2>& means() const { return means_; }  // [slot][num_rois] (hi, lo)
  int64_t voxels() const { return voxels_; }
  int64_t rois() const { return rois_; }
  int64_t slots() const { return slots_; }
  size_t local_size() const { return local_size_; }
  const std::vector<int64_t>& voxel_counts() const { return counts_; }  // voxels per region

  // Attaches a per-kernel device-time breakdown (benchmarks); null detaches. `stage` names this instance's launches.
  void set_profile(KernelProfile* profile, std::string stage = "roi means") {
    profile_ = profile;
    stage_ = std::move(stage);
  }

 private:
  Device& device_;
  int64_t voxels_;
  int64_t rois_;
  int64_t slots_;
  size_t local_size_ = 1;
  std::vector<int64_t> counts_;
  DeviceBuffer<cl_int> members_;   // voxel indices grouped by region
  DeviceBuffer<cl_int> offsets_;   // [rois + 1]
  DeviceBuffer<cl_float2> means_;  // [slots][rois] (hi, lo)
  mutable std::vector<cl_float2> readback_;
  ClKernel kernel_;
  KernelProfile* profile_ = nullptr;
  std::string stage_ = "roi means";
};

}  // namespace rtf
