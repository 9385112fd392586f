// DeviceSliceMeans: each slice's mean intensity inside the mask, and the global signal (the mean over the whole mask),
// of a volume on the device (kernels/slice_means.cl: one work-group per slice; the host adds its items' partial sums in
// double). The QA stage's slice drop-out and spike z-scores (core/qa/slice_zscores.hpp) and its global signal trace.
// docs/algorithms/qa.md.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/device/pinned_host.hpp"

namespace rtf {

struct SliceMeans {
  std::vector<double> slice;  // per slice z: the mean of its masked, finite voxels; NaN where it has none
  double global = 0.0;        // the mean of every masked, finite voxel; NaN where there is none
};

class DeviceSliceMeans {
 public:
  // `mask`: one byte per voxel of a dims[0] x dims[1] x dims[2] grid (x fastest), non-zero inside; uploaded once.
  DeviceSliceMeans(Device& device, std::array<int64_t, 3> dims, std::span<const uint8_t> mask);

  // The slice means and global signal of `volume` (at least the grid's voxels).
  SliceMeans measure(const DeviceBuffer<float>& volume);
  // The same in two steps, so that a caller can enqueue several measures and wait once: enqueue() launches and starts
  // the reads; result() once the queue has finished.
  void enqueue(const DeviceBuffer<float>& volume);
  SliceMeans result() const;

 private:
  static constexpr int kLocalSize = 256;
  Device& device_;
  std::array<int64_t, 3> dims_;
  ClKernel kernel_;
  DeviceBuffer<uint8_t> mask_;
  DeviceBuffer<float> sums_;
  DeviceBuffer<int> counts_;
  PinnedHost<float> sums_host_;  // the reads' destinations (page-locked)
  PinnedHost<int> counts_host_;
  bool enqueued_ = false;
};

}  // namespace rtf
