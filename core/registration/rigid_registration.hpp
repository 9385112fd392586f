// RigidRegistration: 6-parameter rigid registration of volumes to a reference on the device, with the reference's
// pyramid (smoothed copies and world-space gradients) prepared once, and reslicing of a volume with an estimate.
// Gauss-Newton, inverse compositional, coarse to fine (core/registration/gauss_newton.hpp); the device computes each
// iteration's normal-equation sums (kernels/rigid_register.cl), the host solves the 6x6 (or 10x10) system.
// docs/algorithms/motion_correction.md. Nothing is allocated per volume.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/device/kernel_profile.hpp"
#include "core/filters/gaussian_smoothing.hpp"
#include "core/image/image.hpp"
#include "core/registration/gauss_newton.hpp"

namespace rtf {

class RigidRegistration {
 public:
  // `grid`: dims, voxel size and affine of the reference and of every volume registered to it. `mask` (nx*ny*nz,
  // nonzero = use) restricts the reference voxels that drive the fit (default: all). Throws std::invalid_argument
  // for a grid smaller than 4 voxels on an axis or a non-invertible affine.
  RigidRegistration(Device& device, const ImageHeader& grid, RegistrationOptions options = {},
                    std::optional<std::span<const uint8_t>> mask = std::nullopt);
  ~RigidRegistration();
  RigidRegistration(const RigidRegistration&) = delete;
  RigidRegistration& operator=(const RigidRegistration&) = delete;

  // Volumes with more than this fraction of NaN or infinite voxels are refused (reference: std::invalid_argument) or
  // flagged (moving volume: failure says how many); fewer are replaced in the registration's copy by the mean of their
  // finite neighbours. Reslicing does not replace them: the corrected volume keeps its NaNs.
  static constexpr double kMaxNonFiniteFraction = 0.01;

  // Sets the reference from a device volume (float, x fastest) at element `offset` of `volume`.
  void set_reference(const DeviceBuffer<float>& volume, size_t offset = 0);
  void set_reference(std::span<const float> volume);  // host convenience

  // Registers the volume at `offset` of `moving` to the reference, starting from `initial` (world -> world).
  RegistrationResult register_volume(const DeviceBuffer<float>& moving, size_t offset = 0,
                                     const Eigen::Matrix4d& initial = Eigen::Matrix4d::Identity());
  RegistrationResult register_volume(std::span<const float> moving,
                                     const Eigen::Matrix4d& initial = Eigen::Matrix4d::Identity());

  // out = moving resampled with `transform` onto the reference grid (`outside` beyond the volume). Enqueued.
  ClEvent reslice(const DeviceBuffer<float>& moving, size_t offset, const Eigen::Matrix4d& transform,
                  DeviceBuffer<float>& out, Interpolation interpolation = Interpolation::kCubic, float outside = 0.0f);

  // The centre about which parameters are expressed: the world position of the volume's central voxel.
  const Eigen::Vector3d& centre() const { return centre_; }
  const RegistrationOptions& options() const { return options_; }
  bool has_reference() const { return has_reference_; }

  // Attaches a per-stage device-time breakdown (benchmarks); null detaches. The caller collects it.
  void set_profile(KernelProfile* profile) { profile_ = profile; }

  // Device sums of one iteration at `level` (for tests against reference::registration_sums).
  NormalEquations sums(int level, const Eigen::Matrix4d& transform, const Eigen::Vector4d& intensity);

 private:
  struct Level;
  void load_moving(const DeviceBuffer<float>& moving, size_t offset);
  // dst = the volume at `offset` of `src` with non-finite voxels replaced; enqueues a non-blocking read of their
  // count into host_non_finite_count_ (complete after the next blocking call on the queue).
  void copy_filling_non_finite(const DeviceBuffer<float>& src, size_t offset, DeviceBuffer<float>& dst);

  Device& device_;
  ImageHeader grid_;
  RegistrationOptions options_;
  Eigen::Vector3d centre_;
  int64_t voxels_;
  std::vector<std::unique_ptr<Level>> levels_;
  DeviceBuffer<float> raw_;         // the reference, non-finite voxels replaced
  DeviceBuffer<float> moving_raw_;  // the moving volume being registered, non-finite voxels replaced
  DeviceBuffer<float> input_;       // host volumes are uploaded here
  std::optional<DeviceBuffer<uint8_t>> mask_;
  DeviceBuffer<float> sums_;
  std::vector<float> host_sums_;
  ClKernel gradient_kernel_;
  ClKernel fill_kernel_;
  DeviceBuffer<cl_int> non_finite_count_;
  cl_int host_non_finite_count_ = 0;
  std::array<ClKernel, 2> reslice_kernels_;  // trilinear, cubic
  bool has_reference_ = false;
  bool item_partials_ = false;  // CPU device: per-item partial sums (rigid_register.cl, ITEM_PARTIALS)
  KernelProfile* profile_ = nullptr;
};

}  // namespace rtf
