// Parameterisations of linear transforms for registration with 6, 9 or 12 degrees of freedom
// (docs/algorithms/registration.md). A parameter vector p refines a starting transform T0:
//
//   T(p) = Tc(t) * R(rx, ry, rz) * S(sx, sy, sz) * K(kxy, kxz, kyz) * Tc^-1 * T0,   Tc(t) = translate(c + t)
//
// with c the centre (world mm, where T0 puts the fixed image's centre), R = Rz Ry Rx (radians, as
// core/geometry/rigid_transform.hpp), S = diag(exp(sx), exp(sy), exp(sz)) and K the unit upper-triangular shear
// [[1, kxy, kxz], [0, 1, kyz], [0, 0, 1]]. dof 6 uses (t, r); 9 adds the log-scales; 12 adds the shears. p = 0 gives
// T0.
#pragma once

#include <Eigen/Core>

namespace rtf {

struct AffineParameterisation {
  int dof = 12;  // 6, 9 or 12
  Eigen::Matrix4d start = Eigen::Matrix4d::Identity();
  Eigen::Vector3d centre = Eigen::Vector3d::Zero();

  Eigen::Matrix4d matrix(const Eigen::VectorXd& p) const;
  // d(B, b)/dp (12 x dof), with T(p) X = B (X - c_fixed) + b for the fixed centre c_fixed: rows are B's entries row by
  // row, then b (the order of the device sums' Jacobian, kernels/linear_register.cl). Central differences in double.
  Eigen::MatrixXd jacobian(const Eigen::VectorXd& p, const Eigen::Vector3d& fixed_centre) const;
};

// The largest distance between a(x) and b(x) over the corners x of the cube of half-width `radius` about `centre`
// (a bound on how far b moves any point of that cube relative to a; the registrations' convergence test).
double max_corner_displacement(const Eigen::Matrix4d& a, const Eigen::Matrix4d& b, const Eigen::Vector3d& centre,
                               double radius);

// The step sizes that move a point at `radius` mm from the centre by about 1 mm: 1 for translations, 1 / radius for
// rotations (radians), log-scales and shears. The quasi-Newton driver works in parameters divided by these.
Eigen::VectorXd parameter_scales(int dof, double radius);

// Throws std::invalid_argument unless dof is 6, 9 or 12.
void check_dof(int dof);

}  // namespace rtf
