// The mean dyadic tensor's principal eigenvector and dispersion of one fibre's samples.
#include "core/diffusion/dyads.hpp"

#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <cmath>
#include <stdexcept>

#include "core/diffusion/ball_stick_signal.hpp"

namespace rtf {

Dyad mean_dyad(const float* th, const float* ph, int samples, int stride) {
  if (samples < 1 || stride < 1) {
    throw std::invalid_argument(
        fmt::format("mean_dyad: need samples >= 1 and stride >= 1 (got {}, {})", samples, stride));
  }
  Eigen::Matrix3d m = Eigen::Matrix3d::Zero();
  for (int k = 0; k < samples; ++k) {
    const size_t i = static_cast<size_t>(k) * static_cast<size_t>(stride);
    const std::array<double, 3> v = fibre_direction(th[i], ph[i]);
    const Eigen::Vector3d e(v[0], v[1], v[2]);
    m.noalias() += e * e.transpose();
  }
  m /= samples;
  const Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> eigen(m);  // eigenvalues ascending
  Eigen::Vector3d axis = eigen.eigenvectors().col(2).normalized();
  // The sign: that of the last component clearly away from 0 (rounding leaves ~1e-17 where 0 is meant).
  const double sign = std::abs(axis.z()) > 1e-9 ? axis.z() : (std::abs(axis.y()) > 1e-9 ? axis.y() : axis.x());
  if (sign < 0) axis = -axis;
  return {{axis.x(), axis.y(), axis.z()}, 1.0 - eigen.eigenvalues()(2)};
}

}  // namespace rtf
