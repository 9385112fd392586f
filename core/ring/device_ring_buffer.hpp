// DeviceRingBuffer: the last W volumes of a run on the device, volume-major ([slot][voxel], so work-item
// i reading voxel i is coalesced). Volume `index` lives in slot index % W. Uploads go through pinned,
// persistently mapped staging memory on the transfer queue; raw scanner datatypes (int16, ...) are
// uploaded as they are and converted to float on the device. Every buffer is allocated in the
// constructor: push() allocates nothing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/image/image.hpp"

namespace rtf {

class DeviceRingBuffer {
 public:
  // `voxels` per volume, `capacity` W volumes. Raw uploads of up to 4 bytes per voxel are supported
  // (uint8, int16, uint16, int32, float32).
  DeviceRingBuffer(Device& device, int64_t voxels, int64_t capacity);
  ~DeviceRingBuffer();
  DeviceRingBuffer(const DeviceRingBuffer&) = delete;
  DeviceRingBuffer& operator=(const DeviceRingBuffer&) = delete;

  // Uploads volume `index` (raw little-endian voxels of `type`, x fastest) into its slot, replacing
  // volume index - W. Returns the event after which the slot holds the float volume: put it in the wait
  // list of kernels that read the slot. Throws std::invalid_argument for a wrong size, an unsupported
  // type, or an index that has already left the window (older than newest - W + 1).
  ClEvent push(int64_t index, std::span<const std::byte> payload, DataType type);

  bool contains(int64_t index) const;
  int64_t slot_of(int64_t index) const { return index % capacity_; }
  int64_t newest() const { return newest_; }  // -1 before the first push
  int64_t capacity() const { return capacity_; }
  int64_t voxels() const { return voxels_; }
  const DeviceBuffer<float>& data() const { return ring_; }

  // Puts volume `index` into its slot from a device buffer (`voxels` floats at element `src_offset`), replacing
  // volume index - W, e.g. a smoothed copy of another ring's volume. Enqueued on the compute queue after `after` (if
  // given); returns the copy's event. Throws as push() for an index outside the window, std::out_of_range for a
  // source range outside `src`.
  ClEvent push_device(int64_t index, const DeviceBuffer<float>& src, size_t src_offset = 0,
                      const ClEvent* after = nullptr);

  // Overwrites held volume `index` with `src` (voxels floats at element 0), e.g. its motion-corrected version.
  // Enqueued on the compute queue after `after` (if given); returns the copy's event.
  ClEvent replace_volume(int64_t index, const DeviceBuffer<float>& src, const ClEvent* after = nullptr);

  // Blocking read of volume `index` (tests, debugging).
  std::vector<float> read_volume(int64_t index) const;

 private:
  struct Staging {
    ClMem pinned;  // CL_MEM_ALLOC_HOST_PTR, mapped once
    std::byte* host = nullptr;
    ClEvent last_use;  // the upload that last read this staging area
  };

  Device& device_;
  int64_t voxels_;
  int64_t capacity_;
  int64_t newest_ = -1;
  std::vector<int64_t> slot_index_;  // which volume each slot holds (-1: none)
  DeviceBuffer<float> ring_;
  DeviceBuffer<std::byte> raw_;  // device copy of a raw (non-float) volume before conversion
  ClEvent raw_consumed_;         // the conversion that last read raw_
  std::array<Staging, 2> staging_;
  int next_staging_ = 0;
  std::array<ClKernel, 4> converters_;  // uint8, int16, uint16, int32
};

}  // namespace rtf
