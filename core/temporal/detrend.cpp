// Detrender: builds and orthonormalises the basis in double, uploads the removed columns as float
// [t][j], and launches the projection kernel (specialised by the number of columns).
#include "core/temporal/detrend.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "core/device/launch.hpp"

namespace rtf {
namespace {

constexpr const char* kSource = "detrend.cl";
constexpr size_t kLocalSize = 64;

}  // namespace

Detrender::Detrender(Device& device, int64_t num_voxels, int64_t num_volumes, double tr_s, DetrendSpec spec)
    : device_(device), num_voxels_(num_voxels), num_volumes_(num_volumes) {
  if (num_voxels < 1) throw std::invalid_argument(fmt::format("detrend: {} voxels per volume", num_voxels));
  if (num_volumes < 1) throw std::invalid_argument(fmt::format("detrend: {} volumes", num_volumes));
  if (num_voxels * num_volumes > (int64_t{1} << 31) - 1) {
    throw std::invalid_argument("detrend: series larger than 2^31 voxels");
  }
  design_ = detrend_design(num_volumes, tr_s, spec);
  basis_ = orthonormal_basis(design_);
  const Eigen::Index first = spec.remove_mean ? 0 : 1;
  removed_ = static_cast<int>(basis_.cols() - first);
  if (removed_ == 0) return;  // only the constant, kept: the identity (enqueue copies)

  std::vector<float> q(static_cast<size_t>(num_volumes * removed_));
  for (int64_t t = 0; t < num_volumes; ++t) {
    for (int j = 0; j < removed_; ++j) {
      q[static_cast<size_t>(t * removed_ + j)] = static_cast<float>(basis_(t, first + j));
    }
  }
  basis_buffer_ = DeviceBuffer<float>(device, q.size(), CL_MEM_READ_ONLY);
  basis_buffer_.write(device.queue(), q);
  std::vector<std::string> defines = {fmt::format("NBASIS={}", removed_)};
  if (spec.remove_mean) defines.emplace_back("REMOVE_MEAN");
  kernel_ = device.kernel(kSource, "detrend", defines);
}

ClEvent Detrender::enqueue(const DeviceBuffer<float>& in, DeviceBuffer<float>& out) {
  const auto needed = static_cast<size_t>(num_voxels_ * num_volumes_);
  if (in.size() < needed || out.size() < needed) {
    throw std::invalid_argument("detrend: device buffers smaller than the series");
  }
  if (removed_ == 0) {
    ClEvent event;
    if (in.get() != out.get()) {
      RTF_CL_CHECK(clEnqueueCopyBuffer(device_.queue(), in.get(), out.get(), 0, 0, needed * sizeof(float), 0, nullptr,
                                       event.out()));
    } else {
      RTF_CL_CHECK(clEnqueueMarkerWithWaitList(device_.queue(), 0, nullptr, event.out()));
    }
    return event;
  }
  const int nvox = static_cast<int>(num_voxels_);
  const int nt = static_cast<int>(num_volumes_);
  set_args(kernel_, in, out, basis_buffer_, nvox, nt);
  return launch<1>(device_.queue(), kernel_, {static_cast<size_t>(nvox)}, {kLocalSize});
}

Image Detrender::detrend(const Image& image) {
  const auto& h = image.header();
  if (h.voxels_per_volume() != num_voxels_ || h.num_volumes != num_volumes_) {
    throw std::invalid_argument(fmt::format("detrend: image has {} voxels x {} volumes, detrender set up for {} x {}",
                                            h.voxels_per_volume(), h.num_volumes, num_voxels_, num_volumes_));
  }
  DeviceBuffer<float> buffer(device_, image.data().size());
  buffer.write(device_.queue(), image.data());
  enqueue(buffer, buffer);
  Image result(h);
  buffer.read(device_.queue(), result.data());
  return result;
}

}  // namespace rtf
