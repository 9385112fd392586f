// The carpet plot's column of one volume (Power 2017, NeuroImage 154:150): the values of a fixed set of voxels,
// gathered on the device so that only those few floats cross to the host each TR. Which voxels: carpet_voxels() picks
// up to `rows` of a mask evenly (in index order), those of a preferred set (grey matter, when a segmentation or
// atlas is known) first.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/device/pinned_host.hpp"

namespace rtf {

struct CarpetVoxels {
  std::vector<int> indices;  // voxel indices in display order
  int64_t split = 0;         // indices before it are in the preferred set (0: none given)
};

// Up to `rows` voxels of `mask` (non-zero inside), spread evenly over its voxels in index order; with `preferred`
// (same size, non-zero: preferred), the preferred voxels of the mask first and the rest after, each share in
// proportion to its size (at least one row for a non-empty part).
CarpetVoxels carpet_voxels(std::span<const uint8_t> mask, int64_t rows, std::span<const uint8_t> preferred = {});

class DeviceCarpetColumn {
 public:
  // `voxels`: the size of a volume (indices are checked against it; throws std::invalid_argument).
  DeviceCarpetColumn(Device& device, int64_t voxels, std::vector<int> indices);
  // The chosen voxels' values of `volume` (at least `voxels` floats): one small blocking read.
  std::vector<float> column(const DeviceBuffer<float>& volume);
  // The same in two steps: enqueue_column() launches and starts the read; column_result() once the queue has finished.
  void enqueue_column(const DeviceBuffer<float>& volume);
  std::vector<float> column_result() const;
  int64_t rows() const { return static_cast<int64_t>(count_); }

 private:
  Device& device_;
  int64_t voxels_;
  size_t count_;
  ClKernel kernel_;
  DeviceBuffer<int> indices_;
  DeviceBuffer<float> values_;
  PinnedHost<float> column_;  // the read's destination (page-locked)
};

}  // namespace rtf
