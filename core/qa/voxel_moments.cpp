// DeviceVoxelMoments: one launch per volume (one work-item per voxel), the maps on request.
#include "core/qa/voxel_moments.hpp"

#include <fmt/format.h>

#include <limits>
#include <stdexcept>

#include "core/device/launch.hpp"

namespace rtf {

namespace {
constexpr size_t kLocalSize = 256;
}  // namespace

DeviceVoxelMoments::DeviceVoxelMoments(Device& device, int64_t voxels)
    : device_(device),
      voxels_(voxels),
      add_(device.kernel("voxel_moments.cl", "moments_add")),
      replace_(device.kernel("voxel_moments.cl", "moments_replace")),
      maps_(device.kernel("voxel_moments.cl", "moments_maps")),
      mean_(device, static_cast<size_t>(voxels > 0 ? voxels : 1)),
      m2_(device, static_cast<size_t>(voxels > 0 ? voxels : 1)),
      sd_(device, static_cast<size_t>(voxels > 0 ? voxels : 1)),
      tsnr_(device, static_cast<size_t>(voxels > 0 ? voxels : 1)) {
  if (voxels <= 0 || voxels > std::numeric_limits<int>::max()) {
    throw std::invalid_argument(fmt::format("DeviceVoxelMoments: {} voxels", voxels));
  }
  reset();
}

void DeviceVoxelMoments::reset() {
  mean_.fill(device_.queue(), 0.0f);
  m2_.fill(device_.queue(), 0.0f);
  count_ = 0;
}

void DeviceVoxelMoments::check_volume(const DeviceBuffer<float>& volume, const char* what) const {
  if (volume.size() < static_cast<size_t>(voxels_)) {
    throw std::invalid_argument(
        fmt::format("DeviceVoxelMoments: {} has {} floats, the moments {} voxels", what, volume.size(), voxels_));
  }
}

void DeviceVoxelMoments::launch_over_voxels(const ClKernel& kernel) {
  launch<1>(device_.queue(), kernel, {static_cast<size_t>(voxels_)}, {kLocalSize}, {}, EventMode::kNone);
}

void DeviceVoxelMoments::add(const DeviceBuffer<float>& volume) {
  check_volume(volume, "the volume");
  ++count_;
  set_args(add_, volume, mean_, m2_, static_cast<int>(voxels_), static_cast<float>(1.0 / static_cast<double>(count_)));
  launch_over_voxels(add_);
}

void DeviceVoxelMoments::replace(const DeviceBuffer<float>& volume, const DeviceBuffer<float>& leaving) {
  check_volume(volume, "the volume");
  check_volume(leaving, "the leaving volume");
  if (count_ == 0) throw std::logic_error("DeviceVoxelMoments::replace: no volume counted yet");
  set_args(replace_, volume, leaving, mean_, m2_, static_cast<int>(voxels_),
           static_cast<float>(1.0 / static_cast<double>(count_)));
  launch_over_voxels(replace_);
}

DeviceVoxelMoments::Running DeviceVoxelMoments::external_add() {
  ++count_;
  return {mean_, m2_, static_cast<float>(1.0 / static_cast<double>(count_))};
}

DeviceVoxelMoments::Running DeviceVoxelMoments::external_replace() {
  if (count_ == 0) throw std::logic_error("DeviceVoxelMoments::external_replace: no volume counted yet");
  return {mean_, m2_, static_cast<float>(1.0 / static_cast<double>(count_))};
}

void DeviceVoxelMoments::compute_maps() {
  if (count_ == 0) throw std::logic_error("DeviceVoxelMoments: no volume counted yet");
  set_args(maps_, mean_, m2_, sd_, tsnr_, static_cast<int>(voxels_),
           static_cast<float>(1.0 / static_cast<double>(count_)));
  launch_over_voxels(maps_);
}

MomentMaps DeviceVoxelMoments::read_maps() {
  compute_maps();
  MomentMaps maps;
  const auto n = static_cast<size_t>(voxels_);
  maps.mean.resize(n);
  maps.sd.resize(n);
  maps.tsnr.resize(n);
  mean_.read(device_.queue(), maps.mean);
  sd_.read(device_.queue(), maps.sd);
  tsnr_.read(device_.queue(), maps.tsnr);
  return maps;
}

}  // namespace rtf
