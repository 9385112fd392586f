// DeviceVolume: one upload, then the sanitising range kernel.
#include "core/registration/device_volume.hpp"

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/device/launch.hpp"

namespace rtf {

namespace {

constexpr const char* kSource = "volume_range.cl";
constexpr size_t kLocal = 64;
constexpr size_t kMaxGroups = 256;
constexpr size_t kTerms = 7;  // kernels/volume_range.cl's RANGE_TERMS

struct Range {
  int64_t non_finite = 0;
  float lo = INFINITY, hi = -INFINITY;
  double mass = 0.0;
  Eigen::Vector3d moment = Eigen::Vector3d::Zero();
};

Range reduce(Device& device, const DeviceBuffer<float>& partial, size_t groups) {
  std::vector<float> p(groups * kTerms);
  partial.read(device.queue(), p);
  Range r;
  for (size_t g = 0; g < groups; ++g) {
    r.non_finite += std::llround(p[g * kTerms]);
    r.lo = std::min(r.lo, p[g * kTerms + 1]);
    r.hi = std::max(r.hi, p[g * kTerms + 2]);
    r.mass += p[g * kTerms + 3];
    for (int a = 0; a < 3; ++a) r.moment[a] += p[g * kTerms + 4 + static_cast<size_t>(a)];
  }
  return r;
}

size_t groups_for(size_t n) {
  return std::clamp<size_t>((n + kLocal - 1) / kLocal, 1, kMaxGroups);
}

}  // namespace

std::shared_ptr<const DeviceVolume> DeviceVolume::upload(Device& device, const Image& image) {
  auto out = std::make_shared<DeviceVolume>();
  out->grid = image.header();
  out->grid.num_volumes = 1;
  const auto n = static_cast<size_t>(image.header().voxels_per_volume());
  cl_command_queue q = device.queue();
  out->data = DeviceBuffer<float>(device, n);
  out->data.write(q, image.volume(0));
  DeviceBuffer<uint8_t> finite(device, n);
  const size_t groups = groups_for(n);
  DeviceBuffer<float> partial(device, groups * kTerms);
  const ClKernel kernel = device.kernel(kSource, "volume_range_partials", {"SANITIZE"});
  const auto& d = out->grid.dims;
  set_args(kernel, out->data, static_cast<cl_ulong>(n), static_cast<int>(d[0]), static_cast<int>(d[1]), finite, partial,
           LocalMemory{kLocal * kTerms * sizeof(float)});
  launch<1>(q, kernel, {groups * kLocal}, {kLocal}, {}, EventMode::kNone);
  const Range r = reduce(device, partial, groups);
  out->non_finite = r.non_finite;
  out->lo = r.lo;
  out->hi = r.hi;
  if (r.mass > 0.0) out->centre_of_mass = (out->grid.affine * (r.moment / r.mass).homogeneous()).head<3>();
  if (r.non_finite > 0) out->finite = std::move(finite);
  return out;
}

std::pair<float, float> DeviceVolume::range_inside(Device& device, const DeviceBuffer<uint8_t>& mask) const {
  const size_t n = data.size();
  const size_t groups = groups_for(n);
  DeviceBuffer<float> partial(device, groups * kTerms);
  const ClKernel kernel = device.kernel(kSource, "volume_range_partials", {"HAS_MASK"});
  // The data are already sanitised: the kernel only reads them here.
  set_args(kernel, data, static_cast<cl_ulong>(n), static_cast<int>(grid.dims[0]), static_cast<int>(grid.dims[1]), mask,
           partial, LocalMemory{kLocal * kTerms * sizeof(float)});
  launch<1>(device.queue(), kernel, {groups * kLocal}, {kLocal}, {}, EventMode::kNone);
  const Range r = reduce(device, partial, groups);
  return {r.lo, r.hi};
}

}  // namespace rtf
