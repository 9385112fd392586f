// AffineParameterisation: matrix of a parameter vector and its Jacobian.
#include "core/registration/affine_params.hpp"

#include <fmt/format.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace rtf {

void check_dof(int dof) {
  if (dof != 6 && dof != 9 && dof != 12) {
    throw std::invalid_argument(fmt::format("degrees of freedom must be 6, 9 or 12, got {}", dof));
  }
}

double max_corner_displacement(const Eigen::Matrix4d& a, const Eigen::Matrix4d& b, const Eigen::Vector3d& centre,
                               double radius) {
  double worst = 0.0;
  for (int corner = 0; corner < 8; ++corner) {
    const Eigen::Vector3d offset((corner & 1) ? radius : -radius, (corner & 2) ? radius : -radius,
                                 (corner & 4) ? radius : -radius);
    const Eigen::Vector4d x((centre + offset).homogeneous());
    worst = std::max(worst, ((b - a) * x).head<3>().norm());
  }
  return worst;
}

Eigen::VectorXd parameter_scales(int dof, double radius) {
  check_dof(dof);
  Eigen::VectorXd s = Eigen::VectorXd::Constant(dof, 1.0 / radius);
  s.head<3>().setOnes();
  return s;
}

Eigen::Matrix4d AffineParameterisation::matrix(const Eigen::VectorXd& p) const {
  check_dof(dof);
  if (p.size() != dof) throw std::invalid_argument("affine parameters: wrong size");
  const Eigen::Matrix3d r =
      (Eigen::AngleAxisd(p[5], Eigen::Vector3d::UnitZ()) * Eigen::AngleAxisd(p[4], Eigen::Vector3d::UnitY()) *
       Eigen::AngleAxisd(p[3], Eigen::Vector3d::UnitX()))
          .toRotationMatrix();
  Eigen::Matrix3d s = Eigen::Matrix3d::Identity();
  if (dof >= 9) s = Eigen::Vector3d(std::exp(p[6]), std::exp(p[7]), std::exp(p[8])).asDiagonal();
  Eigen::Matrix3d k = Eigen::Matrix3d::Identity();
  if (dof == 12) {
    k(0, 1) = p[9];
    k(0, 2) = p[10];
    k(1, 2) = p[11];
  }
  Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
  m.topLeftCorner<3, 3>() = r * s * k;
  m.topRightCorner<3, 1>() = centre + p.head<3>() - m.topLeftCorner<3, 3>() * centre;
  return m * start;
}

Eigen::MatrixXd AffineParameterisation::jacobian(const Eigen::VectorXd& p, const Eigen::Vector3d& fixed_centre) const {
  auto flat = [&](const Eigen::VectorXd& q) {
    const Eigen::Matrix4d m = matrix(q);
    Eigen::Matrix<double, 12, 1> f;
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) f[3 * r + c] = m(r, c);
    }
    f.tail<3>() = m.topLeftCorner<3, 3>() * fixed_centre + m.topRightCorner<3, 1>();
    return f;
  };
  constexpr double kStep = 1e-6;
  Eigen::MatrixXd d(12, dof);
  for (int j = 0; j < dof; ++j) {
    Eigen::VectorXd plus = p, minus = p;
    plus[j] += kStep;
    minus[j] -= kStep;
    d.col(j) = (flat(plus) - flat(minus)) / (2.0 * kStep);
  }
  return d;
}

}  // namespace rtf
