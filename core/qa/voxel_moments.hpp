// DeviceVoxelMoments: the voxel-wise mean, SD and tSNR of a run's volumes kept on the device, updated with each new
// volume (Welford's running update, kernels/voxel_moments.cl), cumulatively or over a sliding window of the last n
// volumes (the window's oldest volume is still on the device, in the ring, when the new one arrives). The live QA
// stage's tSNR maps and `rtfmri qa`'s mean, SD and tSNR maps. docs/algorithms/qa.md.
#pragma once

#include <cstdint>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"

namespace rtf {

// Host copies of the maps (one float per voxel each).
struct MomentMaps {
  std::vector<float> mean;
  std::vector<float> sd;    // population SD (divided by the count, as numpy's std and MRIQC's tSNR)
  std::vector<float> tsnr;  // mean / sd; 0 where sd is 0; NaN where a counted value was not finite
};

class DeviceVoxelMoments {
 public:
  DeviceVoxelMoments(Device& device, int64_t voxels);

  // Counts `volume` (at least `voxels` floats): the moments of every volume added so far.
  void add(const DeviceBuffer<float>& volume);
  // A sliding window: counts `volume` and drops `leaving`, a volume counted earlier (the oldest of the window), so that
  // the count stays the same. Needs count() > 0.
  void replace(const DeviceBuffer<float>& volume, const DeviceBuffer<float>& leaving);
  // Forgets every volume.
  void reset();

  // For a kernel that updates the moments together with other measures (core/qa/volume_pass.hpp): the state buffers
  // and the 1 / n its update must use, the count recorded as add() or replace() would (replace needs count() > 0).
  struct Running {
    DeviceBuffer<float>& mean;
    DeviceBuffer<float>& m2;
    float inv_n;
  };
  Running external_add();
  Running external_replace();

  int64_t count() const { return count_; }
  int64_t voxels() const { return voxels_; }

  // The SD and tSNR maps computed on the device into sd() and tsnr() (count() > 0).
  void compute_maps();
  const DeviceBuffer<float>& mean() const { return mean_; }
  const DeviceBuffer<float>& sd() const { return sd_; }
  const DeviceBuffer<float>& tsnr() const { return tsnr_; }
  // compute_maps(), then the three maps read back.
  MomentMaps read_maps();

 private:
  void check_volume(const DeviceBuffer<float>& volume, const char* what) const;
  void launch_over_voxels(const ClKernel& kernel);

  Device& device_;
  int64_t voxels_;
  int64_t count_ = 0;
  ClKernel add_, replace_, maps_;
  DeviceBuffer<float> mean_, m2_, sd_, tsnr_;
};

}  // namespace rtf
