// A 3D image on the device for registration, uploaded once and shared by the linear and non-linear registrations of
// one normalisation: its voxels with every non-finite value set to 0 (on the device), which voxels were finite, how
// many were not, the range of the finite values and the intensity centre of mass (kernels/volume_range.cl).
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/image/image.hpp"

namespace rtf {

struct DeviceVolume {
  ImageHeader grid;                             // 3D
  DeviceBuffer<float> data;                     // non-finite voxels set to 0
  std::optional<DeviceBuffer<uint8_t>> finite;  // 1 where the original value was finite; only when some were not
  int64_t non_finite = 0;
  float lo = 0.0f, hi = 0.0f;  // range of the finite values (lo > hi: none)
  // The intensity centre of mass of the positive finite voxels (world mm); none when no voxel is positive.
  std::optional<Eigen::Vector3d> centre_of_mass;

  // Uploads volume 0 of `image` (a 3D image; the caller checks the shape) and sanitises it on the device.
  static std::shared_ptr<const DeviceVolume> upload(Device& device, const Image& image);

  // The range of the finite values at the voxels where `mask` is nonzero (lo > hi when there is none).
  std::pair<float, float> range_inside(Device& device, const DeviceBuffer<uint8_t>& mask) const;
};

}  // namespace rtf
