// DeviceDvars: DVARS of consecutive motion-corrected volumes on the device, so that the live motion stage does not
// read each corrected volume back to the host (3 MB at 104x104x72) and loop over it there. Same definition as
// rtf::dvars (core/motion/motion_metrics.hpp): the RMS over the mask of the volume-to-volume difference, voxels with
// a non-finite difference left out. Keeps a device copy of the previous volume.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/device/pinned_host.hpp"

namespace rtf {

class DeviceDvars {
 public:
  // `mask`: one byte per voxel (non-zero: inside), uploaded once.
  DeviceDvars(Device& device, std::span<const uint8_t> mask);

  // DVARS between `current` (one volume) and the volume given to the previous call (NaN for the first call; 0 for an
  // empty mask; NaN when no masked voxel has a finite difference). Then keeps a copy of `current` as the previous.
  double next(const DeviceBuffer<float>& current);
  // The same in two steps: enqueue_next() launches, starts the reads and the copy; next_result() once the queue has
  // finished.
  void enqueue_next(const DeviceBuffer<float>& current);
  double next_result() const;

 private:
  static constexpr int kLocalSize = 256;
  static constexpr int kGroups = 64;
  Device& device_;
  int n_;
  bool mask_empty_;
  bool has_previous_ = false;
  ClKernel kernel_;
  DeviceBuffer<uint8_t> mask_;
  DeviceBuffer<float> previous_;
  DeviceBuffer<float> partial_sum_;
  DeviceBuffer<int> partial_count_;
  enum class Pending { kNone, kFirst, kEmpty, kSums } pending_ = Pending::kNone;
  PinnedHost<float> sums_host_;  // the reads' destinations (page-locked)
  PinnedHost<int> counts_host_;
};

}  // namespace rtf
