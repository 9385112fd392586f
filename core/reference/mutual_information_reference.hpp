// Double-precision reference for the mutual-information cost of linear registration (kernels/mutual_information.cl),
// written for clarity: the joint histogram over the sample points (fixed voxels stride * (i, j, k) inside `mask`,
// whose moving position lies within [0, n - 1] of the moving grid; a box window on the fixed bin, cubic B-spline
// weights on the moving bin coordinate, core/registration/mutual_information.hpp's binning), MI, and its gradient with
// respect to the 12 entries of T X = B (X - centre) + b:
//   dMI/dT = (moving_inv / N) sum_X q(X) * grad M(T X) (x) (X - centre, 1),  q = sum_k beta3'(e - k) log(p(a, k) /
//   p_M(k))
// No smoothing: the caller passes the level's images.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/image/image.hpp"
#include "core/registration/mutual_information.hpp"

namespace rtf::reference {

MiEvaluation mutual_information(const Image& fixed, const Image& moving, std::optional<std::span<const uint8_t>> mask,
                                int stride, const Eigen::Matrix4d& transform, const Eigen::Vector3d& centre,
                                const MiBinning& binning, std::vector<double>* histogram = nullptr);

}  // namespace rtf::reference
