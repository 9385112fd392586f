// Double-precision reference for one Gauss-Newton iteration of rigid registration and for trilinear reslicing,
// written for clarity (docs/algorithms/motion_correction.md). The device kernels (kernels/rigid_register.cl) are
// tested against these on odd sizes with random data.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/registration/gauss_newton.hpp"
#include "core/registration/normal_equations.hpp"

namespace rtf::reference {

struct RegistrationGrid {
  std::array<int64_t, 3> dims{1, 1, 1};
  Eigen::Matrix4d affine = Eigen::Matrix4d::Identity();  // voxel -> world (mm)
};

// Trilinear sample of `volume` (x fastest) at voxel coordinates u; nullopt outside [0, n-1] on any axis.
std::optional<double> trilinear(std::span<const float> volume, const std::array<int64_t, 3>& dims,
                                const Eigen::Vector3d& u);

// Keys cubic convolution (a = -0.5) sample at voxel coordinates u; nullopt unless all 64 taps lie inside the volume
// (u in [1, n-2] on every axis). Registration sums skip such points; reslicing falls back to trilinear there.
std::optional<double> tricubic(std::span<const float> volume, const std::array<int64_t, 3>& dims,
                               const Eigen::Vector3d& u);

// The volume with each NaN or infinite voxel replaced by the mean of its finite 26 neighbours (0 if none).
std::vector<float> fill_non_finite(std::span<const float> volume, const std::array<int64_t, 3>& dims);

// The sums of one iteration: for every reference voxel v on the lattice of step `stride` (offset 0), interior
// (1 <= v < n-1 on every axis), inside `mask` if given: x = A v, d = x - centre, g = A^-T (central difference
// gradient of `reference` at v, per voxel), J = [g, d x g] (+ reference(v) * [1, d/radius] with the intensity model),
// r = moving(A^-1 M x) - reference(v) * (1 + lambda . [1, d/radius]) (trilinear; skipped when outside). Non-finite
// voxels of either volume are first replaced as by fill_non_finite, as in the device's copies.
NormalEquations registration_sums(std::span<const float> reference, std::span<const float> moving,
                                  const RegistrationGrid& grid, const Eigen::Matrix4d& world_transform,
                                  const Eigen::Vector3d& centre_mm, int stride,
                                  std::optional<std::span<const uint8_t>> mask, bool intensity_model,
                                  const Eigen::Vector4d& lambda, double radius_mm,
                                  Interpolation interpolation = Interpolation::kTrilinear);

// moving resampled onto the reference grid: out(v) = moving(A^-1 M A v), `outside` where that lies outside the
// volume.
std::vector<double> reslice(std::span<const float> moving, const RegistrationGrid& grid,
                            const Eigen::Matrix4d& world_transform, double outside = 0.0,
                            Interpolation interpolation = Interpolation::kTrilinear);

// The whole registration with reference sums: per level, both images smoothed by smooth_volume (unmasked), then
// gauss_newton_register. Slow; for tests on small grids.
RegistrationResult register_rigid(std::span<const float> reference, std::span<const float> moving,
                                  const RegistrationGrid& grid, const RegistrationOptions& options,
                                  const Eigen::Matrix4d& initial, const Eigen::Vector3d& centre_mm,
                                  std::optional<std::span<const uint8_t>> mask = std::nullopt);

}  // namespace rtf::reference
