// DeviceMaskedSort: the values of a mask's voxels in rows of volumes sorted on the device, as order-preserving uint
// keys (kernels/rank_correlation.cl: tiles of 1,024 keys sorted in local memory, then runs merged `merge_ways` at a
// time, one launch a pass). What the quality index ranks (core/qa/quality_index.hpp) and the live stage's tSNR median
// reads (core/qa/masked_median.hpp). docs/algorithms/qa.md.
#pragma once

#include <bit>
#include <cstdint>
#include <span>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"

namespace rtf {

// The host's float_sort_key (kernels/sort_key.clh): a float's key whose unsigned order is the float order, -0 as +0.
inline uint32_t float_sort_key(float x) {
  const auto bits = std::bit_cast<uint32_t>(x == 0.0f ? 0.0f : x);
  return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}

class DeviceMaskedSort {
 public:
  static constexpr int kLocalSize = 256;
  static constexpr int kTile = 1024;  // keys sorted per work-group

  // Device bytes one row takes (its keys, the sorted runs and their ping-pong twin, its flag) for a mask of `count`
  // voxels.
  static int64_t row_bytes(int64_t count);

  // `mask`: one byte per voxel (non-zero: inside); `max_rows`: rows sorted at once (>= 1); `merge_ways`: 2..64.
  // Throws std::invalid_argument for an empty mask or bad settings, std::runtime_error for a device whose work-groups
  // are too small.
  DeviceMaskedSort(Device& device, std::span<const uint8_t> mask, int max_rows, int merge_ways);

  // Enqueues the sort of volumes first .. first + rows - 1 of `volumes` (volume t at t * the mask's voxels): per row
  // the masked values' keys into keys() (row r at r * count()), the keys sorted ascending into the buffer returned (row
  // r at r * total(), padded after count() with 0xFFFFFFFF), and, with `flag_nonfinite`, bad() set to 1 where a
  // value is not finite (0 otherwise; without it, bad() holds no meaning). Nothing waits.
  const DeviceBuffer<uint32_t>& enqueue(const DeviceBuffer<float>& volumes, int first, int rows,
                                        bool flag_nonfinite = true);

  const DeviceBuffer<uint32_t>& keys() const { return keys_; }
  const DeviceBuffer<int>& bad() const { return bad_; }
  int count() const { return count_; }               // the mask's voxels
  int total() const { return tile_count_ * kTile; }  // a sorted row's length
  int max_rows() const { return max_rows_; }
  int64_t voxels() const { return voxels_; }

 private:
  Device& device_;
  int64_t voxels_;
  int count_ = 0;
  int max_rows_;
  int merge_ways_;
  int tile_count_ = 1;
  ClKernel sort_tiles_, merge_;
  DeviceBuffer<int> masked_, bad_;
  DeviceBuffer<uint32_t> keys_, tiles_, merged_;
};

}  // namespace rtf
