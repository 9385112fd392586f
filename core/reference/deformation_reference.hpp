// Double-precision reference for the deformation-field kernels of the non-linear registration (kernels/deformation.cl,
// core/registration/deformation_ops.hpp), written for clarity, not speed. A field is three volumes back to back (the
// x, y and z components, each x fastest), a displacement in voxel units of its own grid; it is sampled trilinearly
// with the taps clamped to the grid, so that beyond the grid it continues as its edge values. Volumes are sampled as
// kernels/sampling.clh says (0 outside [-0.5, n - 0.5]). docs/algorithms/normalization.md.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace rtf::reference {

using Dims = std::array<int64_t, 3>;

// c(x) = s a(x) + s b(x + s a(x)): the field of (id + s b) o (id + s a), a applied first.
std::vector<double> compose_fields(std::span<const float> a, std::span<const float> b, const Dims& dims, double scale);

// exp(v) by scaling and squaring: u = v / 2^K, then K times u <- u + u(x + u). Every step in double.
std::vector<double> field_exponential(std::span<const float> v, const Dims& dims, int squarings);

// J(x) = M(x + u(x)), trilinear, 0 where x + u(x) lies outside the grid.
std::vector<double> warp_volume(std::span<const float> moving, std::span<const float> u, const Dims& dims);

// The gradient of a volume by central differences in voxel units, 0 on the grid's outer faces (as
// kernels/rigid_register.cl's reference_gradient): three volumes.
std::vector<double> volume_gradient(std::span<const float> volume, const Dims& dims);

// The local (Gaussian-window) correlation of F and J and its ascent force (docs/algorithms/normalization.md):
// with the window-weighted means m_F, m_J and (co)variances s_FF, s_JJ, s_FJ at x (normalised convolution with
// `window_taps`, as the smoothing reference), cc = s_FJ^2 / (s_FF s_JJ) and
//   force = 2 s_FJ / (s_FF s_JJ) [(F - m_F) - (s_FJ / s_JJ) (J - m_J)] grad J,
// both 0 where s_FF <= eps_fixed or s_JJ <= eps_moving.
struct LnccForce {
  std::vector<double> force;  // three volumes
  std::vector<double> cc;
};
LnccForce lncc_force(std::span<const float> fixed, std::span<const float> warped, const Dims& dims,
                     const std::array<std::vector<double>, 3>& window_taps, double eps_fixed, double eps_moving);

// The demons force of the sum of squared differences (Thirion 1998, with the warped image's gradient; Vercauteren et
// al. 2009): (F - J) grad J / (|grad J|^2 + alpha^2 (F - J)^2), 0 where the denominator is below 1e-12. `cost` gets
// (F - J)^2.
struct DemonsForce {
  std::vector<double> force;
  std::vector<double> cost;
};
DemonsForce demons_force(std::span<const float> fixed, std::span<const float> warped, const Dims& dims, double alpha);

// det(I + Du) per voxel, Du by central differences (one-sided on the grid's faces), in voxel units.
std::vector<double> jacobian_determinant(std::span<const float> u, const Dims& dims);

// The checks of a final warp (kernels/deformation.cl's warp_check_partials, reduced): the smallest and largest det,
// the voxels with det <= 0 (all, and inside the mask: mask_image > 0), the voxels inside the mask and the mean and
// largest |residual| there.
struct WarpCheck {
  double min_det = 0.0, max_det = 0.0;
  int64_t folded = 0, folded_in_mask = 0, in_mask = 0;
  double mean_residual = 0.0, max_residual = 0.0;
};
WarpCheck warp_check(std::span<const float> det, std::span<const float> residual, std::span<const float> mask_image);

}  // namespace rtf::reference
