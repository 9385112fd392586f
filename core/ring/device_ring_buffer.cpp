// DeviceRingBuffer: pinned staging, transfer-queue uploads, on-device conversion to float.
#include "core/ring/device_ring_buffer.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "core/device/launch.hpp"

namespace rtf {
namespace {

// Converter kernel for the raw types the ring accepts: 0..3 as in converters_, -1 for float32 (no kernel).
int converter_for(DataType type) {
  switch (type) {
    case DataType::kUint8:
      return 0;
    case DataType::kInt16:
      return 1;
    case DataType::kUint16:
      return 2;
    case DataType::kInt32:
      return 3;
    case DataType::kFloat32:
      return -1;
    default:
      throw std::invalid_argument(fmt::format(
          "ring buffer: {} voxels are not supported (uint8, int16, uint16, int32, float32)", to_string(type)));
  }
}

}  // namespace

DeviceRingBuffer::DeviceRingBuffer(Device& device, int64_t voxels, int64_t capacity)
    : device_(device), voxels_(voxels), capacity_(capacity) {
  if (voxels < 1 || capacity < 1) {
    throw std::invalid_argument(fmt::format("ring buffer: {} voxels x {} volumes", voxels, capacity));
  }
  if (voxels * capacity >= (int64_t{1} << 31)) {
    throw std::invalid_argument(fmt::format("ring buffer: {} x {} voxels exceed 2^31", voxels, capacity));
  }
  const auto n = static_cast<size_t>(voxels);
  slot_index_.assign(static_cast<size_t>(capacity), -1);
  ring_ = DeviceBuffer<float>(device, n * static_cast<size_t>(capacity));
  raw_ = DeviceBuffer<std::byte>(device, n * 4);
  for (auto& s : staging_) {
    s.pinned = ClMem(RTF_CL_CREATE(
        clCreateBuffer(device.context(), CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, n * 4, nullptr, &rtf_cl_err)));
    s.host = static_cast<std::byte*>(RTF_CL_CREATE(clEnqueueMapBuffer(
        device.transfer_queue(), s.pinned.get(), CL_TRUE, CL_MAP_WRITE, 0, n * 4, 0, nullptr, nullptr, &rtf_cl_err)));
  }
  const char* types[] = {"uchar", "short", "ushort", "int"};
  for (size_t i = 0; i < converters_.size(); ++i) {
    converters_[i] = device.kernel("convert_to_float.cl", "convert_to_float", {fmt::format("SRC_TYPE={}", types[i])});
  }
}

DeviceRingBuffer::~DeviceRingBuffer() {
  for (auto& s : staging_) {
    if (s.host != nullptr) {
      clEnqueueUnmapMemObject(device_.transfer_queue(), s.pinned.get(), s.host, 0, nullptr, nullptr);
    }
  }
  clFinish(device_.transfer_queue());
  clFinish(device_.queue());
}

bool DeviceRingBuffer::contains(int64_t index) const {
  return index >= 0 && slot_index_[static_cast<size_t>(slot_of(index))] == index;
}

ClEvent DeviceRingBuffer::push(int64_t index, std::span<const std::byte> payload, DataType type) {
  const int converter = converter_for(type);
  const size_t bytes = static_cast<size_t>(voxels_) * static_cast<size_t>(bytes_per_voxel(type));
  if (payload.size() != bytes) {
    throw std::invalid_argument(fmt::format("ring buffer: volume {} has {} bytes, expected {} ({} voxels of {})", index,
                                            payload.size(), bytes, voxels_, to_string(type)));
  }
  if (index < 0 || (newest_ >= 0 && index <= newest_ - capacity_)) {
    throw std::invalid_argument(fmt::format("ring buffer: volume {} is outside the window of the last {} (newest {})",
                                            index, capacity_, newest_));
  }

  // Reuse the staging area only once the upload that last read it has finished.
  Staging& s = staging_[static_cast<size_t>(next_staging_)];
  next_staging_ = 1 - next_staging_;
  if (s.last_use) {
    cl_event e = s.last_use.get();
    RTF_CL_CHECK(clWaitForEvents(1, &e));
  }
  std::memcpy(s.host, payload.data(), bytes);

  // The mapped pinned pointer is the *host source* of a non-blocking write (DMA from page-locked memory).
  // Copying from the pinned cl_mem itself would read its device-side storage, which a mapped pointer's
  // writes reach only at unmap on some drivers (NVIDIA).
  const size_t slot = static_cast<size_t>(slot_of(index));
  ClEvent done;
  if (converter < 0) {
    // float32: straight into its slot.
    RTF_CL_CHECK(clEnqueueWriteBuffer(device_.transfer_queue(), ring_.get(), CL_FALSE,
                                      slot * static_cast<size_t>(voxels_) * sizeof(float), bytes, s.host, 0, nullptr,
                                      done.out()));
    s.last_use = done;
  } else {
    // raw_ is shared between pushes: the upload waits until the previous conversion has read it.
    ClEvent uploaded;
    cl_event previous = raw_consumed_.get();
    RTF_CL_CHECK(clEnqueueWriteBuffer(device_.transfer_queue(), raw_.get(), CL_FALSE, 0, bytes, s.host,
                                      previous ? 1 : 0, previous ? &previous : nullptr, uploaded.out()));
    RTF_CL_CHECK(clFlush(device_.transfer_queue()));
    s.last_use = uploaded;
    const ClKernel& k = converters_[static_cast<size_t>(converter)];
    const int slot_arg = static_cast<int>(slot), n = static_cast<int>(voxels_);
    set_args(k, raw_, ring_, slot_arg, n);
    done = launch<1>(device_.queue(), k, {static_cast<size_t>(voxels_)}, {128}, {uploaded.get()});
    raw_consumed_ = done;
  }
  RTF_CL_CHECK(clFlush(device_.queue()));
  RTF_CL_CHECK(clFlush(device_.transfer_queue()));
  slot_index_[slot] = index;
  if (index > newest_) newest_ = index;
  return done;
}

ClEvent DeviceRingBuffer::push_device(int64_t index, const DeviceBuffer<float>& src, size_t src_offset,
                                      const ClEvent* after) {
  if (index < 0 || (newest_ >= 0 && index <= newest_ - capacity_)) {
    throw std::invalid_argument(fmt::format("ring buffer: volume {} is outside the window of the last {} (newest {})",
                                            index, capacity_, newest_));
  }
  if (src_offset + static_cast<size_t>(voxels_) > src.size()) {
    throw std::out_of_range(fmt::format("ring buffer: source range {}+{} beyond {}", src_offset, voxels_, src.size()));
  }
  const size_t slot = static_cast<size_t>(slot_of(index));
  const cl_event wait = after != nullptr ? after->get() : nullptr;
  ClEvent event;
  RTF_CL_CHECK(clEnqueueCopyBuffer(device_.queue(), src.get(), ring_.get(), src_offset * sizeof(float),
                                   slot * static_cast<size_t>(voxels_) * sizeof(float),
                                   static_cast<size_t>(voxels_) * sizeof(float), wait != nullptr ? 1 : 0,
                                   wait != nullptr ? &wait : nullptr, event.out()));
  slot_index_[slot] = index;
  if (index > newest_) newest_ = index;
  return event;
}

ClEvent DeviceRingBuffer::replace_volume(int64_t index, const DeviceBuffer<float>& src, const ClEvent* after) {
  if (!contains(index)) throw std::out_of_range(fmt::format("ring buffer: volume {} is not held", index));
  if (src.size() < static_cast<size_t>(voxels_)) throw std::invalid_argument("ring buffer: replacement too small");
  const cl_event wait = after != nullptr ? after->get() : nullptr;
  ClEvent event;
  RTF_CL_CHECK(clEnqueueCopyBuffer(device_.queue(), src.get(), ring_.get(), 0,
                                   static_cast<size_t>(slot_of(index) * voxels_) * sizeof(float),
                                   static_cast<size_t>(voxels_) * sizeof(float), wait != nullptr ? 1 : 0,
                                   wait != nullptr ? &wait : nullptr, event.out()));
  return event;
}

std::vector<float> DeviceRingBuffer::read_volume(int64_t index) const {
  if (!contains(index)) throw std::out_of_range(fmt::format("ring buffer: volume {} is not held", index));
  std::vector<float> out(static_cast<size_t>(voxels_));
  RTF_CL_CHECK(clFinish(device_.transfer_queue()));
  ring_.read(device_.queue(), out, static_cast<size_t>(slot_of(index) * voxels_));
  return out;
}

}  // namespace rtf
