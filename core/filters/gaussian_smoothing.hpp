// 3D Gaussian smoothing on the device: separable x, y, z passes over batches of volumes.
// Unmasked: samples outside the volume are missing and each pass renormalises by the in-bounds
// weights. Masked: normalised convolution ((v.c) * f) / (c * f) with c the mask (Knutsson &
// Westin 1993, as used in BROCCOLI); voxels outside the mask become 0. See docs/algorithms/smoothing.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/device/launch.hpp"
#include "core/image/image.hpp"

namespace rtf {

// How the device computes it: kAuto takes the fused one-launch kernel (smooth_fused.cl) when the
// smoothing is unmasked, one volume per launch, the device is a GPU and the tile with its halo fits in
// 32 KiB of local memory (small filters, e.g. FWHM 6 mm on 3 mm voxels), else three separable passes
// (faster for batches, wide filters and CPU devices, measured: docs/performance.md).
enum class SmoothingPath { kAuto, kSeparablePasses, kFused };

struct SmoothingSpec {
  double fwhm_mm = 6.0;          // isotropic FWHM in mm (converted per axis by the voxel size)
  double truncate_sigmas = 4.0;  // filter half-width in sigmas
  SmoothingPath path = SmoothingPath::kAuto;
  // Fused path only: output tile per work-group (x, y, z); default: the largest of 16x8x8, 8x8x8, 8x8x4
  // whose halo fits. For tuning and benchmarks.
  std::optional<std::array<int, 3>> fused_tile = std::nullopt;
};

class GaussianSmoother {
 public:
  // `dims`/`voxel_mm` fix the grid; `mask` (nx*ny*nz, nonzero = inside) switches to normalised
  // convolution; `max_batch_volumes` sizes the scratch buffers (volumes per launch).
  GaussianSmoother(Device& device, std::array<int64_t, 3> dims, std::array<double, 3> voxel_mm, SmoothingSpec spec,
                   std::optional<std::span<const uint8_t>> mask = std::nullopt, int64_t max_batch_volumes = 1);

  // Smooths `num_volumes` volumes from `in` into `out` (both device buffers of at least that many
  // volumes; distinct buffers). Enqueued on the compute queue; returns the last pass's event
  // and, if `first_pass` is given, stores the first pass's event there (for timing).
  ClEvent enqueue(const DeviceBuffer<float>& in, DeviceBuffer<float>& out, int64_t num_volumes,
                  ClEvent* first_pass = nullptr);

  // Runs the three passes with an event each and returns their device times in ms (benchmarks).
  std::array<double, 3> profile_passes(const DeviceBuffer<float>& in, DeviceBuffer<float>& out, int64_t num_volumes);

  // Host convenience: uploads, smooths every volume (in batches) and downloads.
  Image smooth(const Image& image);

  const std::array<std::vector<double>, 3>& taps() const { return taps_; }
  int64_t max_batch_volumes() const { return max_batch_; }
  bool fused() const { return fused_; }
  const std::array<int, 3>& fused_tile() const { return fused_tile_; }

 private:
  ClEvent run_pass(int axis, const DeviceBuffer<float>& in, DeviceBuffer<float>& out, int64_t num_volumes,
                   EventMode mode);
  bool setup_fused(SmoothingPath path, const std::optional<std::array<int, 3>>& tile);
  void check_batch(const DeviceBuffer<float>& in, const DeviceBuffer<float>& out, int64_t num_volumes) const;

  Device& device_;
  std::array<int64_t, 3> dims_;
  int64_t max_batch_;
  bool masked_;
  bool fused_ = false;
  std::array<int, 3> fused_tile_{};
  ClKernel fused_kernel_;
  std::array<std::vector<double>, 3> taps_;
  std::array<DeviceBuffer<float>, 3> tap_buffers_;
  std::array<ClKernel, 3> kernels_;
  DeviceBuffer<uint8_t> mask_;
  DeviceBuffer<float> certainty_;
  DeviceBuffer<float> scratch_a_, scratch_b_;
};

}  // namespace rtf
