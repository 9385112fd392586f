// GaussianSmoother: kernel specialisation per axis, certainty precomputation, batching.
#include "core/filters/gaussian_smoothing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/device/launch.hpp"
#include "core/filters/gaussian_taps.hpp"

namespace rtf {
namespace {

constexpr const char* kSource = "smooth_separable.cl";
constexpr size_t kFusedWorkGroup = 256;

size_t ceil_div(int64_t a, int b) {
  return static_cast<size_t>((a + b - 1) / b);
}

std::array<size_t, 3> local_size(const std::array<int64_t, 3>& dims) {
  return {dims[0] >= 32 ? size_t{32} : size_t{16}, 4, 1};
}

// Outputs per work-item along the pass axis (register blocking); x relies on coalescing instead.
int block_for_axis(int axis) {
  return axis == 0 ? 1 : 8;
}

std::vector<std::string> grid_defines(const std::array<int64_t, 3>& dims, int axis, int radius) {
  return {fmt::format("NX={}", dims[0]),    fmt::format("NY={}", dims[1]),
          fmt::format("NZ={}", dims[2]),    fmt::format("AXIS={}", axis),
          fmt::format("RADIUS={}", radius), fmt::format("BLOCK={}", block_for_axis(axis))};
}

// NDRange of one separable pass over `nvol` volumes (see smooth_separable.cl).
std::array<size_t, 3> pass_global_size(const std::array<int64_t, 3>& dims, int axis, int64_t nvol) {
  std::array<size_t, 3> g = {static_cast<size_t>(dims[0]), static_cast<size_t>(dims[1]),
                             static_cast<size_t>(dims[2] * nvol)};
  const int64_t block = block_for_axis(axis);
  if (axis == 1) g[1] = static_cast<size_t>((dims[1] + block - 1) / block);
  if (axis == 2) g[2] = static_cast<size_t>((dims[2] + block - 1) / block * nvol);
  return g;
}

}  // namespace

GaussianSmoother::GaussianSmoother(Device& device, std::array<int64_t, 3> dims, std::array<double, 3> voxel_mm,
                                   SmoothingSpec spec, std::optional<std::span<const uint8_t>> mask,
                                   int64_t max_batch_volumes)
    : device_(device), dims_(dims), max_batch_(max_batch_volumes), masked_(mask.has_value()) {
  for (int a = 0; a < 3; ++a) {
    if (dims[a] < 1) throw std::invalid_argument(fmt::format("smoothing: dimension {} is {}", a, dims[a]));
    if (!(voxel_mm[a] > 0.0))
      throw std::invalid_argument(fmt::format("smoothing: voxel size {} is {}", a, voxel_mm[a]));
  }
  if (!(spec.fwhm_mm >= 0.0)) throw std::invalid_argument(fmt::format("smoothing: FWHM {} mm", spec.fwhm_mm));
  if (max_batch_ < 1) throw std::invalid_argument("smoothing: batch of fewer than 1 volume");
  const int64_t nvox = dims[0] * dims[1] * dims[2];
  if (nvox * max_batch_ >= (int64_t{1} << 31)) {
    throw std::invalid_argument(
        fmt::format("smoothing: batch of {} voxels exceeds 2^31; use smaller batches", nvox * max_batch_));
  }
  if (mask && static_cast<int64_t>(mask->size()) != nvox) {
    throw std::invalid_argument(fmt::format("smoothing: mask has {} voxels, volume has {}", mask->size(), nvox));
  }

  for (int a = 0; a < 3; ++a) {
    taps_[a] = gaussian_taps(fwhm_to_sigma(spec.fwhm_mm) / voxel_mm[a], spec.truncate_sigmas);
    std::vector<float> taps_f(taps_[a].begin(), taps_[a].end());
    tap_buffers_[a] = DeviceBuffer<float>(device, taps_f.size(), CL_MEM_READ_ONLY);
    tap_buffers_[a].write(device.queue(), taps_f);
    const int radius = static_cast<int>(taps_[a].size() / 2);
    std::vector<std::string> defines = grid_defines(dims, a, radius);
    if (!masked_) defines.emplace_back("NORMALIZE");
    if (masked_ && a == 0) defines.emplace_back("MASK_INPUT");
    if (masked_ && a == 2) defines.emplace_back("FINISH_MASKED");
    kernels_[a] = device.kernel(kSource, "smooth_axis", defines);
  }

  fused_ = setup_fused(spec.path, spec.fused_tile);
  const auto batch_voxels = static_cast<size_t>(nvox * max_batch_);
  scratch_a_ = DeviceBuffer<float>(device, batch_voxels);
  scratch_b_ = DeviceBuffer<float>(device, batch_voxels);
  mask_ = DeviceBuffer<uint8_t>(device, static_cast<size_t>(nvox), CL_MEM_READ_ONLY);
  certainty_ = DeviceBuffer<float>(device, static_cast<size_t>(nvox));
  if (masked_) {
    mask_.write(device.queue(), *mask);
    // Certainty c * f: the mask as 0/1 floats smoothed with the same taps, zero padding, no normalisation.
    DeviceBuffer<float> c0(device, static_cast<size_t>(nvox)), c1(device, static_cast<size_t>(nvox));
    ClKernel to_float = device.kernel("mask_to_float.cl", "mask_to_float");
    const int n = static_cast<int>(nvox);
    set_args(to_float, mask_, c0, n);
    launch<1>(device.queue(), to_float, {static_cast<size_t>(nvox)}, {64});
    for (int a = 0; a < 3; ++a) {
      const int radius = static_cast<int>(taps_[a].size() / 2);
      ClKernel k = device.kernel(kSource, "smooth_axis", grid_defines(dims, a, radius));
      const auto& src = (a % 2 == 0) ? c0 : c1;
      auto& dst = (a == 2) ? certainty_ : ((a % 2 == 0) ? c1 : c0);
      const int one = 1;
      set_args(k, src, dst, tap_buffers_[a], mask_, certainty_, one);
      launch<3>(device.queue(), k, pass_global_size(dims_, a, 1), local_size(dims_));
    }
    RTF_CL_CHECK(clFinish(device.queue()));
  }
}

ClEvent GaussianSmoother::run_pass(int axis, const DeviceBuffer<float>& in, DeviceBuffer<float>& out,
                                   int64_t num_volumes, EventMode mode) {
  const int nvol = static_cast<int>(num_volumes);
  set_args(kernels_[axis], in, out, tap_buffers_[axis], mask_, certainty_, nvol);
  return launch<3>(device_.queue(), kernels_[axis], pass_global_size(dims_, axis, num_volumes), local_size(dims_), {},
                   mode);
}

bool GaussianSmoother::setup_fused(SmoothingPath path, const std::optional<std::array<int, 3>>& tile_choice) {
  if (path == SmoothingPath::kSeparablePasses) return false;
  // On CPU devices (PoCL) work-group barriers and local memory are emulated: measured 4x slower there.
  if (path == SmoothingPath::kAuto && !device_.info().is_gpu()) return false;
  // Batches of volumes fill the GPU with the separable passes, which then run closer to copy speed
  // (measured); the fused kernel wins for one volume per launch, the live per-TR case.
  if (path == SmoothingPath::kAuto && max_batch_ > 1) return false;
  if (masked_) {
    if (path == SmoothingPath::kFused) throw std::invalid_argument("smoothing: the fused kernel has no masked variant");
    return false;
  }
  std::array<int, 3> radius{};
  for (int a = 0; a < 3; ++a) radius[a] = static_cast<int>(taps_[a].size() / 2);
  // Largest tile whose halo fits in local memory (at most 48 KiB, the portable limit per work-group).
  // kAuto stops at 32 KiB: measured on an H100 (docs/performance.md), tiles above that leave too few
  // work-groups per multiprocessor and the separable passes win.
  const size_t local_limit =
      std::min<size_t>(device_.info().local_mem_bytes, path == SmoothingPath::kAuto ? 32 * 1024 : 48 * 1024);
  std::vector<std::array<int, 3>> tiles = {{16, 8, 8}, {8, 8, 8}, {8, 8, 4}};
  if (tile_choice) tiles = {*tile_choice};
  for (const auto& tile : tiles) {
    if (tile[0] < 1 || tile[1] < 1 || tile[2] < 1)
      throw std::invalid_argument("smoothing: fused tile must be positive");
    const size_t lx = static_cast<size_t>(tile[0] + 2 * radius[0]) | 1u;
    const size_t bytes = lx * static_cast<size_t>(tile[1] + 2 * radius[1]) *
                         static_cast<size_t>(tile[2] + 2 * radius[2]) * sizeof(float);
    if (bytes > local_limit) continue;
    fused_tile_ = tile;
    fused_kernel_ =
        device_.kernel("smooth_fused.cl", "smooth_fused",
                       {fmt::format("NX={}", dims_[0]), fmt::format("NY={}", dims_[1]), fmt::format("NZ={}", dims_[2]),
                        fmt::format("TX={}", tile[0]), fmt::format("TY={}", tile[1]), fmt::format("TZ={}", tile[2]),
                        fmt::format("RX={}", radius[0]), fmt::format("RY={}", radius[1]),
                        fmt::format("RZ={}", radius[2]), fmt::format("WG={}", kFusedWorkGroup)});
    return true;
  }
  if (path == SmoothingPath::kFused) {
    throw std::invalid_argument("smoothing: filter too wide for the fused kernel's local-memory tile");
  }
  return false;
}

void GaussianSmoother::check_batch(const DeviceBuffer<float>& in, const DeviceBuffer<float>& out,
                                   int64_t num_volumes) const {
  const auto needed = static_cast<size_t>(dims_[0] * dims_[1] * dims_[2] * num_volumes);
  if (num_volumes < 1 || num_volumes > max_batch_) {
    throw std::invalid_argument(fmt::format("smoothing: batch of {} volumes (max {})", num_volumes, max_batch_));
  }
  if (in.size() < needed || out.size() < needed) {
    throw std::invalid_argument("smoothing: device buffers smaller than the batch");
  }
  if (fused_ && in.get() == out.get()) {
    throw std::invalid_argument("smoothing: the fused kernel cannot smooth in place; use separate buffers");
  }
}

ClEvent GaussianSmoother::enqueue(const DeviceBuffer<float>& in, DeviceBuffer<float>& out, int64_t num_volumes,
                                  ClEvent* first_pass) {
  check_batch(in, out, num_volumes);
  if (fused_) {
    const int nvol = static_cast<int>(num_volumes);
    set_args(fused_kernel_, in, out, tap_buffers_[0], tap_buffers_[1], tap_buffers_[2], nvol);
    ClEvent event = launch<3>(device_.queue(), fused_kernel_,
                              {ceil_div(dims_[0], fused_tile_[0]) * kFusedWorkGroup, ceil_div(dims_[1], fused_tile_[1]),
                               ceil_div(dims_[2], fused_tile_[2]) * static_cast<size_t>(num_volumes)},
                              {kFusedWorkGroup, 1, 1});
    if (first_pass) *first_pass = event;
    return event;
  }
  ClEvent first = run_pass(0, in, scratch_a_, num_volumes, first_pass ? EventMode::kReturn : EventMode::kNone);
  if (first_pass) *first_pass = std::move(first);
  run_pass(1, scratch_a_, scratch_b_, num_volumes, EventMode::kNone);
  return run_pass(2, scratch_b_, out, num_volumes, EventMode::kReturn);
}

std::array<double, 3> GaussianSmoother::profile_passes(const DeviceBuffer<float>& in, DeviceBuffer<float>& out,
                                                       int64_t num_volumes) {
  check_batch(in, out, num_volumes);
  std::array<ClEvent, 3> events = {run_pass(0, in, scratch_a_, num_volumes, EventMode::kReturn),
                                   run_pass(1, scratch_a_, scratch_b_, num_volumes, EventMode::kReturn),
                                   run_pass(2, scratch_b_, out, num_volumes, EventMode::kReturn)};
  return {event_milliseconds(events[0]), event_milliseconds(events[1]), event_milliseconds(events[2])};
}

Image GaussianSmoother::smooth(const Image& image) {
  const auto& h = image.header();
  if (h.dims != dims_) throw std::invalid_argument("smoothing: image grid differs from the smoother's grid");
  Image result(h);
  const auto nvox = static_cast<size_t>(h.voxels_per_volume());
  DeviceBuffer<float> in(device_, nvox * static_cast<size_t>(max_batch_));
  DeviceBuffer<float> out(device_, nvox * static_cast<size_t>(max_batch_));
  for (int64_t t0 = 0; t0 < image.nt(); t0 += max_batch_) {
    const int64_t n = std::min(max_batch_, image.nt() - t0);
    const auto count = nvox * static_cast<size_t>(n);
    in.write(device_.queue(), std::span<const float>(image.data().data() + nvox * static_cast<size_t>(t0), count));
    enqueue(in, out, n);
    out.read(device_.queue(), std::span<float>(result.data().data() + nvox * static_cast<size_t>(t0), count));
  }
  return result;
}

}  // namespace rtf
