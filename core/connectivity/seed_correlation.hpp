// SeedCorrelation: seed-based correlation maps every TR on the device. The seed's time course is the mean over its
// voxels per volume (RoiTimeseries with one region); the maps are the Pearson correlation r of every voxel's time
// course with it and Fisher's z = atanh(r) (core/connectivity/fisher_z.hpp), over a sliding window (the last W volumes,
// recomputed from them every TR: no add-then-subtract drift) and cumulatively (every volume so far: compensated
// running sums of deviations from each voxel's first value, updated with one volume per TR). Kernels:
// kernels/connectivity_seed_map.cl, VEC voxels per work-item (ConnectivityOptions::vector_width: 1 on GPUs, the
// native float width on CPU devices by default). Constructed once per run; update() allocates nothing.
// docs/algorithms/connectivity.md.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/connectivity/roi_timeseries.hpp"
#include "core/connectivity/window.hpp"
#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/device/kernel_profile.hpp"
#include "core/image/image.hpp"

namespace rtf {

class SeedCorrelation {
 public:
  // `grid`: the EPI grid; `seed_voxels`: voxel indices of the seed (seed_from_mask, seed_from_sphere), non-empty;
  // `slots`: volumes the data buffer holds (a ring's capacity, a series' length). Throws std::invalid_argument for an
  // empty seed, a voxel index outside the grid, a window < 2 or larger than `slots`, neither estimate enabled, or a
  // vector width other than 0, 1, 2, 4, 8 or 16.
  SeedCorrelation(Device& device, const ImageHeader& grid, std::span<const int32_t> seed_voxels, int64_t slots,
                  ConnectivityOptions options = {});
  // Waits for the window-slot uploads still reading host staging memory (the enqueued kernels keep their buffers).
  ~SeedCorrelation();
  SeedCorrelation(const SeedCorrelation&) = delete;
  SeedCorrelation& operator=(const SeedCorrelation&) = delete;

  // One TR. `data`: [slot][voxel] floats (DeviceRingBuffer::data(), or a series buffer where volume t is slot t);
  // `slots_in_time_order`: the volumes held, oldest first, whose last W form the sliding window; `newest_slot`: the
  // volume that arrived this TR (the last entry), added to the cumulative sums: pass each volume once, in order.
  // A slot's seed mean is computed when it is the newest (or first seen); a slot's content may change only when it
  // becomes the newest. Enqueued on the compute queue after everything already there; returns the last event.
  // `after`: an event the work must wait for (e.g. DeviceRingBuffer::push's, which completes on the transfer queue).
  ClEvent update(const DeviceBuffer<float>& data, std::span<const int64_t> slots_in_time_order, int64_t newest_slot,
                 const ClEvent* after = nullptr);

  // Starts the cumulative sums afresh (a new run); the next update's newest volume is the first.
  void reset_cumulative();

  // The maps after the last update ([voxel] floats; NaN where undefined: fewer than 2 volumes, a constant voxel or
  // seed). Allocated only for the enabled estimates.
  const DeviceBuffer<float>& sliding_r() const { return maps_[0]; }
  const DeviceBuffer<float>& sliding_z() const { return maps_[1]; }
  const DeviceBuffer<float>& cumulative_r() const { return maps_[2]; }
  const DeviceBuffer<float>& cumulative_z() const { return maps_[3]; }
  std::vector<float> read(const DeviceBuffer<float>& map) const;  // blocking, after the queue's work

  // The seed's mean per slot ([slot] (hi, lo) float pairs on the device: RoiTimeseries::means).
  const DeviceBuffer<cl_float2>& seed_means() const { return seed_.means(); }
  int64_t seed_size() const { return static_cast<int64_t>(seed_.voxel_counts()[0]); }
  int64_t window_volumes() const { return window_volumes_; }          // volumes in the last sliding window
  int64_t cumulative_volumes() const { return cumulative_volumes_; }  // volumes added to the cumulative sums
  const ConnectivityOptions& options() const { return options_; }
  int vector_width() const { return vec_; }  // voxels per work-item of the map kernels (options' 0 resolved)

  // Attaches a per-kernel device-time breakdown (benchmarks); null detaches. The caller collects it.
  void set_profile(KernelProfile* profile);

 private:
  size_t work_items() const;  // ceil(voxels / vec_)
  size_t local_size() const;

  Device& device_;
  int64_t voxels_;
  int64_t slots_;
  ConnectivityOptions options_;
  int vec_;
  RoiTimeseries seed_;
  std::vector<uint8_t> seed_valid_;  // per slot: its seed mean is up to date
  std::vector<uint8_t> seen_;        // checked_window scratch
  DeviceBuffer<cl_int> window_slots_;
  std::array<std::vector<cl_int>, 2> staging_;  // host sources of the non-blocking window-slot uploads
  std::array<ClEvent, 2> staged_;               // the upload that last read each staging vector
  int next_staging_ = 0;
  DeviceBuffer<float> state_;                // [14][voxels], kernels/connectivity_seed_map.cl
  std::array<DeviceBuffer<float>, 4> maps_;  // sliding r, z; cumulative r, z
  ClKernel window_kernel_;
  ClKernel cumulative_kernel_;
  int64_t window_volumes_ = 0;
  int64_t cumulative_volumes_ = 0;
  KernelProfile* profile_ = nullptr;
};

// Offline use of the same kernels: the whole series in one device buffer (volume t in slot t), update() per volume in
// order. Returns the maps after the last volume (host vectors of nx*ny*nz; empty for a disabled estimate).
struct SeedMaps {
  std::vector<float> sliding_r, sliding_z, cumulative_r, cumulative_z;
};
SeedMaps seed_correlation_series(Device& device, const Image& bold, std::span<const int32_t> seed_voxels,
                                 ConnectivityOptions options = {});

}  // namespace rtf
