// Double-precision reference for one iteration's sums of linear registration (kernels/linear_register.cl), written
// for clarity: for every fixed voxel v = stride * (i, j, k) (inside `mask` if given), X = A_f v, u = A_m^-1 T X; points
// with u outside [0, n - 1] on any moving axis are skipped. The moving image's world gradient (central differences
// times A_m^-T, zero on the border voxels) and value are interpolated trilinearly at u; with g = scale * gradient,
// d = X - centre, J = (g_i d_j row by row, g, M, 1) and r = scale * M + offset - F(v), the sums of J J^T, J r, r^2, the
// count and F, F^2, M, M^2, F M. No smoothing: the caller passes the level's images.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "core/image/image.hpp"
#include "core/registration/linear_sums.hpp"

namespace rtf::reference {

// (world gradient, value) of every voxel of `image` (central differences times A^-T, zero on the border voxels), and
// its trilinear interpolation at voxel coordinates u (taps clamped to the volume), as the device computes them.
std::vector<Eigen::Vector4d> gradient_and_value(const Image& image);
Eigen::Vector4d trilinear4(const std::vector<Eigen::Vector4d>& volume, const std::array<int64_t, 3>& dims,
                           const Eigen::Vector3d& u);

// Calls visit(world X, fixed voxel index, interpolated (gradient, value) of the moving image at T X) for every sample
// point: fixed voxels stride * (i, j, k), inside `mask` if given, whose moving position lies within [0, n - 1].
void for_each_sample_point(
    const Image& fixed, const Image& moving, std::optional<std::span<const uint8_t>> mask, int stride,
    const Eigen::Matrix4d& transform,
    const std::function<void(const Eigen::Vector3d& world, size_t fixed_index, const Eigen::Vector4d& gm)>& visit);

LinearSums linear_sums(const Image& fixed, const Image& moving, std::optional<std::span<const uint8_t>> mask,
                       int stride, const Eigen::Matrix4d& transform, const Eigen::Vector3d& centre, double scale,
                       double offset);

}  // namespace rtf::reference
