// Double-precision reference for the local-correlation (LNCC) cost of linear registration (kernels/linear_lncc.cl),
// written for clarity: the lattice of fixed voxels stride * (i, j, k); at each lattice point X the moving image's value
// and world gradient interpolated at T X, and c = 1 when T X lies within [0, n - 1] of the moving grid (else 0); the
// window means by the smoothing reference (`window_taps` on the lattice) over the inside points: m = G*(c x) / G*c;
// cc = s_FJ^2 / (s_FF s_JJ) counted at inside points with G*c >= 0.5 whose variances exceed their eps (and inside
// `mask`); the mean cc over the counted points and its exact gradient with respect to the 12 entries of
// T X = B (X - centre) + b:
//   d(sum cc)/dJ(y) = F(y) (G*a)(y) - (G*(a m_F))(y) - J(y) (G*b)(y) + (G*(b m_J))(y),
//   a = 2 s_FJ / (G*c s_FF s_JJ), b = a s_FJ / s_JJ, times grad M(T X_y) (x) (X_y - centre, 1) over the inside points,
// divided by the count.
// No image smoothing: the caller passes the level's images.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/image/image.hpp"
#include "core/registration/mutual_information.hpp"

namespace rtf::reference {

// MiEvaluation's `mi` holds the mean cc here.
MiEvaluation local_correlation(const Image& fixed, const Image& moving, std::optional<std::span<const uint8_t>> mask,
                               int stride, const Eigen::Matrix4d& transform, const Eigen::Vector3d& centre,
                               const std::array<std::vector<double>, 3>& window_taps, double eps_fixed,
                               double eps_moving);

}  // namespace rtf::reference
