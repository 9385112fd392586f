// RoiTimeseries: region member lists (CSR) and the per-region mean kernel.
#include "core/connectivity/roi_timeseries.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/device/launch.hpp"

namespace rtf {
namespace {

// GPUs: a work-group of 128 per region reduces in local memory. CPU devices (PoCL): one work-item per region, no
// barrier (work-group barriers are emulated there; see rigid_registration.cpp for the measured case).
constexpr size_t kGpuLocalSize = 128;

}  // namespace

RoiTimeseries::RoiTimeseries(Device& device, std::span<const int32_t> roi_of_voxel, int64_t num_rois, int64_t slots,
                             size_t local_size)
    : device_(device), voxels_(static_cast<int64_t>(roi_of_voxel.size())), rois_(num_rois), slots_(slots) {
  if (voxels_ < 1 || voxels_ >= (int64_t{1} << 31)) {
    throw std::invalid_argument(fmt::format("roi means: {} voxels per volume", voxels_));
  }
  if (num_rois < 1 || num_rois >= (int64_t{1} << 24))
    throw std::invalid_argument(fmt::format("roi means: {} regions", num_rois));
  if (slots < 1) throw std::invalid_argument(fmt::format("roi means: {} slots", slots));
  if (slots * num_rois >= (int64_t{1} << 31)) throw std::invalid_argument("roi means: table exceeds 2^31 entries");
  counts_.assign(static_cast<size_t>(num_rois), 0);
  for (size_t v = 0; v < roi_of_voxel.size(); ++v) {
    const int32_t r = roi_of_voxel[v];
    if (r < -1 || r >= num_rois) {
      throw std::invalid_argument(fmt::format("roi means: voxel {} has region {} (valid: -1..{})", v, r, num_rois - 1));
    }
    if (r >= 0) ++counts_[static_cast<size_t>(r)];
  }
  std::vector<cl_int> offsets(static_cast<size_t>(num_rois) + 1, 0);
  for (size_t r = 0; r < counts_.size(); ++r) offsets[r + 1] = offsets[r] + static_cast<cl_int>(counts_[r]);
  std::vector<cl_int> members(std::max<size_t>(static_cast<size_t>(offsets.back()), 1), 0);
  std::vector<cl_int> next(offsets.begin(), offsets.end() - 1);
  for (size_t v = 0; v < roi_of_voxel.size(); ++v) {  // ascending voxel order within each region
    const int32_t r = roi_of_voxel[v];
    if (r >= 0) members[static_cast<size_t>(next[static_cast<size_t>(r)]++)] = static_cast<cl_int>(v);
  }
  members_ = DeviceBuffer<cl_int>(device, members.size(), CL_MEM_READ_ONLY);
  members_.write(device.queue(), members);
  offsets_ = DeviceBuffer<cl_int>(device, offsets.size(), CL_MEM_READ_ONLY);
  offsets_.write(device.queue(), offsets);
  means_ = DeviceBuffer<cl_float2>(device, static_cast<size_t>(slots * num_rois));
  readback_.resize(static_cast<size_t>(num_rois));
  if (local_size != 0 && (local_size & (local_size - 1)) != 0) {
    throw std::invalid_argument(fmt::format("roi means: local size {} is not a power of two", local_size));
  }
  local_size_ = local_size != 0 ? local_size : (device.info().is_gpu() ? kGpuLocalSize : 1);
  kernel_ = device.kernel("connectivity_roi_means.cl", "roi_means",
                          {fmt::format("NROI={}", num_rois), fmt::format("LOCAL_SIZE={}", local_size_)});
}

ClEvent RoiTimeseries::enqueue(const DeviceBuffer<float>& data, int64_t slot) {
  if (slot < 0 || slot >= slots_) throw std::out_of_range(fmt::format("roi means: slot {} of {}", slot, slots_));
  if (static_cast<int64_t>(data.size()) < (slot + 1) * voxels_) {
    throw std::invalid_argument(fmt::format("roi means: the data buffer ({} floats) holds no slot {} of {} voxels",
                                            data.size(), slot, voxels_));
  }
  const auto offset = static_cast<cl_ulong>(slot * voxels_);
  set_args(kernel_, data, offset, members_, offsets_, means_, static_cast<cl_int>(slot));
  ClEvent done = launch<1>(device_.queue(), kernel_, {static_cast<size_t>(rois_) * local_size_}, {local_size_});
  if (profile_) profile_->add(stage_, done);
  return done;
}

void RoiTimeseries::read(int64_t slot, std::span<double> out) const {
  if (slot < 0 || slot >= slots_) throw std::out_of_range(fmt::format("roi means: slot {} of {}", slot, slots_));
  if (static_cast<int64_t>(out.size()) != rois_) throw std::invalid_argument("roi means: output size");
  means_.read(device_.queue(), readback_, static_cast<size_t>(slot * rois_));
  for (size_t r = 0; r < out.size(); ++r) {
    out[r] = static_cast<double>(readback_[r].s[0]) + static_cast<double>(readback_[r].s[1]);
  }
}

}  // namespace rtf
