// Rigid-body transforms of world space (RAS mm) from six parameters — translations in mm, rotations in
// degrees — and back, with FSL .par and AFNI 3dvolreg column orders. The convention (docs/algorithms/phantom.md):
//
//   x' = R (x - c) + c + t,   R = Rz(rz) * Ry(ry) * Rx(rx)
//
// for column vectors x in world mm: rotate about the x axis first, then y, then z (axes fixed in world
// space), each angle positive counter-clockwise when looking from the positive end of its axis towards
// the origin (right-hand rule: rx turns +y towards +z, ry turns +z towards +x, rz turns +x towards +y),
// about the centre c (world mm), then translate by t = (tx, ty, tz). As a 4x4 matrix acting on (x, 1):
// M = T(c + t) * R * T(-c). The matrix does not depend on the centre's convention; the parameters do.
#pragma once

#include <Eigen/Core>
#include <array>

namespace rtf {

struct RigidParams {
  std::array<double, 3> translation_mm{0.0, 0.0, 0.0};  // tx, ty, tz
  std::array<double, 3> rotation_deg{0.0, 0.0, 0.0};    // rx, ry, rz
};

// Rz(rz) * Ry(ry) * Rx(rx), angles in degrees.
Eigen::Matrix3d rotation_matrix(const std::array<double, 3>& rotation_deg);

// The 4x4 homogeneous matrix M = T(c + t) R T(-c) of the parameters about `centre_mm`.
Eigen::Matrix4d rigid_matrix(const RigidParams& params, const Eigen::Vector3d& centre_mm = Eigen::Vector3d::Zero());

// The parameters of a rigid 4x4 matrix about `centre_mm` (inverse of rigid_matrix). Angles come back with
// ry in [-90, 90] and rx, rz in (-180, 180]; at ry = +-90 (gimbal lock) rz is set to 0. Throws
// std::invalid_argument when M is not rigid: |R^T R - I| or |det R - 1| above `tolerance`, or a last row
// other than (0, 0, 0, 1).
RigidParams rigid_params(const Eigen::Matrix4d& matrix, const Eigen::Vector3d& centre_mm = Eigen::Vector3d::Zero(),
                         double tolerance = 1e-6);

// The parameters of inverse(M) and of M_a * M_b (b applied first), both about the same centre.
RigidParams inverse(const RigidParams& params, const Eigen::Vector3d& centre_mm = Eigen::Vector3d::Zero());
RigidParams compose(const RigidParams& a, const RigidParams& b,
                    const Eigen::Vector3d& centre_mm = Eigen::Vector3d::Zero());

// FSL .par column order (as mcflirt writes it): rx ry rz in radians, then tx ty tz in mm. Only the order
// and units change; the values are still this file's convention (FSL's own estimates use FSL's centre).
std::array<double, 6> to_fsl_par(const RigidParams& params);
RigidParams from_fsl_par(const std::array<double, 6>& par);

// AFNI 3dvolreg -1Dfile column order: roll pitch yaw (degrees) dS dL dP (mm), with roll about the I-S
// axis (rz), pitch about R-L (rx), yaw about A-P (ry), and displacements towards Superior (+z), Left (-x
// in RAS) and Posterior (-y in RAS): {rz, rx, ry, tz, -tx, -ty}. Order, units and axis directions only;
// AFNI's own rotation order and sign of its estimates are not reproduced.
std::array<double, 6> to_afni_dfile(const RigidParams& params);
RigidParams from_afni_dfile(const std::array<double, 6>& dfile);

// Power et al. (2012) framewise displacement between two parameter sets: sum of the absolute translation
// differences plus the absolute rotation differences (radians) as arc length on a sphere of `radius_mm`.
double framewise_displacement(const RigidParams& previous, const RigidParams& current, double radius_mm = 50.0);

}  // namespace rtf
