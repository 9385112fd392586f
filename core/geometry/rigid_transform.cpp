// Rigid transforms: parameters <-> 4x4 matrices (R = Rz Ry Rx, degrees, about a centre), FSL/AFNI orders.
#include "core/geometry/rigid_transform.hpp"

#include <fmt/format.h>

#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace rtf {
namespace {

constexpr double kDegPerRad = 180.0 / std::numbers::pi;
constexpr double kRadPerDeg = std::numbers::pi / 180.0;

}  // namespace

Eigen::Matrix3d rotation_matrix(const std::array<double, 3>& rotation_deg) {
  const double ax = rotation_deg[0] * kRadPerDeg;
  const double ay = rotation_deg[1] * kRadPerDeg;
  const double az = rotation_deg[2] * kRadPerDeg;
  Eigen::Matrix3d rx, ry, rz;
  rx << 1, 0, 0, 0, std::cos(ax), -std::sin(ax), 0, std::sin(ax), std::cos(ax);
  ry << std::cos(ay), 0, std::sin(ay), 0, 1, 0, -std::sin(ay), 0, std::cos(ay);
  rz << std::cos(az), -std::sin(az), 0, std::sin(az), std::cos(az), 0, 0, 0, 1;
  return rz * ry * rx;
}

Eigen::Matrix4d rigid_matrix(const RigidParams& params, const Eigen::Vector3d& centre_mm) {
  const Eigen::Matrix3d r = rotation_matrix(params.rotation_deg);
  const Eigen::Vector3d t(params.translation_mm[0], params.translation_mm[1], params.translation_mm[2]);
  Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
  m.topLeftCorner<3, 3>() = r;
  m.topRightCorner<3, 1>() = centre_mm + t - r * centre_mm;
  return m;
}

RigidParams rigid_params(const Eigen::Matrix4d& matrix, const Eigen::Vector3d& centre_mm, double tolerance) {
  const Eigen::Matrix3d r = matrix.topLeftCorner<3, 3>();
  const double orthogonality = (r.transpose() * r - Eigen::Matrix3d::Identity()).cwiseAbs().maxCoeff();
  const double det_error = std::abs(r.determinant() - 1.0);
  const double last_row = (matrix.row(3) - Eigen::RowVector4d(0, 0, 0, 1)).cwiseAbs().maxCoeff();
  if (!matrix.allFinite() || !(orthogonality <= tolerance) || !(det_error <= tolerance) || !(last_row <= tolerance)) {
    throw std::invalid_argument(
        fmt::format("not a rigid transform: |R'R - I| = {:.3g}, |det R - 1| = {:.3g}, last row off by {:.3g} "
                    "(tolerance {:.3g})",
                    orthogonality, det_error, last_row, tolerance));
  }
  // R = Rz Ry Rx = [[cy cz, ., .], [cy sz, ., .], [-sy, cy sx, cy cx]].
  RigidParams p;
  const double sy = std::clamp(-r(2, 0), -1.0, 1.0);
  const double cy = std::hypot(r(0, 0), r(1, 0));
  if (cy > 1e-9) {
    p.rotation_deg[0] = std::atan2(r(2, 1), r(2, 2)) * kDegPerRad;
    p.rotation_deg[1] = std::atan2(sy, cy) * kDegPerRad;
    p.rotation_deg[2] = std::atan2(r(1, 0), r(0, 0)) * kDegPerRad;
  } else {  // gimbal lock: only rx - rz (sy = 1) or rx + rz (sy = -1) is determined; take rz = 0
    p.rotation_deg[1] = sy > 0.0 ? 90.0 : -90.0;
    p.rotation_deg[0] = (sy > 0.0 ? std::atan2(r(0, 1), r(0, 2)) : std::atan2(-r(0, 1), -r(0, 2))) * kDegPerRad;
    p.rotation_deg[2] = 0.0;
  }
  // Re-derive R from the angles so that t is consistent with the parameters even for a slightly non-orthogonal R.
  const Eigen::Matrix3d r_fit = rotation_matrix(p.rotation_deg);
  const Eigen::Vector3d t = matrix.topRightCorner<3, 1>() - centre_mm + r_fit * centre_mm;
  p.translation_mm = {t.x(), t.y(), t.z()};
  return p;
}

RigidParams inverse(const RigidParams& params, const Eigen::Vector3d& centre_mm) {
  const Eigen::Matrix4d m = rigid_matrix(params, centre_mm);
  Eigen::Matrix4d inv = Eigen::Matrix4d::Identity();
  inv.topLeftCorner<3, 3>() = m.topLeftCorner<3, 3>().transpose();
  inv.topRightCorner<3, 1>() = -(m.topLeftCorner<3, 3>().transpose() * m.topRightCorner<3, 1>());
  return rigid_params(inv, centre_mm);
}

RigidParams compose(const RigidParams& a, const RigidParams& b, const Eigen::Vector3d& centre_mm) {
  return rigid_params(rigid_matrix(a, centre_mm) * rigid_matrix(b, centre_mm), centre_mm);
}

std::array<double, 6> to_fsl_par(const RigidParams& p) {
  return {p.rotation_deg[0] * kRadPerDeg,
          p.rotation_deg[1] * kRadPerDeg,
          p.rotation_deg[2] * kRadPerDeg,
          p.translation_mm[0],
          p.translation_mm[1],
          p.translation_mm[2]};
}

RigidParams from_fsl_par(const std::array<double, 6>& par) {
  RigidParams p;
  p.rotation_deg = {par[0] * kDegPerRad, par[1] * kDegPerRad, par[2] * kDegPerRad};
  p.translation_mm = {par[3], par[4], par[5]};
  return p;
}

std::array<double, 6> to_afni_dfile(const RigidParams& p) {
  return {p.rotation_deg[2],   p.rotation_deg[0],    p.rotation_deg[1],
          p.translation_mm[2], -p.translation_mm[0], -p.translation_mm[1]};
}

RigidParams from_afni_dfile(const std::array<double, 6>& d) {
  RigidParams p;
  p.rotation_deg = {d[1], d[2], d[0]};
  p.translation_mm = {-d[4], -d[5], d[3]};
  return p;
}

double framewise_displacement(const RigidParams& previous, const RigidParams& current, double radius_mm) {
  double fd = 0.0;
  for (int i = 0; i < 3; ++i) {
    fd += std::abs(current.translation_mm[i] - previous.translation_mm[i]);
    fd += radius_mm * std::abs(current.rotation_deg[i] - previous.rotation_deg[i]) * kRadPerDeg;
  }
  return fd;
}

}  // namespace rtf
