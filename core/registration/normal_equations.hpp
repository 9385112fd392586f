// The Gauss-Newton normal equations of rigid registration (docs/algorithms/motion_correction.md): the sums
// H = sum J^T J, b = sum J^T r over the sampled reference voxels, for the 6 rigid parameters (translation mm,
// rotation rad, inverse compositional on the reference) and optionally 4 intensity parameters (a linear intensity
// scaling field). What one iteration's device kernel (or the reference) reduces, and how the driver solves it.
#pragma once

#include <Eigen/Core>
#include <cstdint>

namespace rtf {

inline constexpr int kRigidParams = 6;
inline constexpr int kIntensityParams = 4;  // scale 1, and its gradient along x, y, z (per radius_mm)
inline constexpr int kMaxParams = kRigidParams + kIntensityParams;

struct NormalEquations {
  Eigen::Matrix<double, kMaxParams, kMaxParams> h = Eigen::Matrix<double, kMaxParams, kMaxParams>::Zero();
  Eigen::Matrix<double, kMaxParams, 1> b = Eigen::Matrix<double, kMaxParams, 1>::Zero();
  double sum_squared_residual = 0.0;
  int64_t count = 0;  // sampled voxels whose moving position lay inside the volume
};

// Layout of the per-voxel accumulators shared by the device kernel and the host: the upper triangle of H row by
// row (i <= j), then b, then the squared residual, then the count. Entries for n parameters:
inline constexpr int normal_equation_terms(int n) {
  return n * (n + 1) / 2 + n + 2;
}

}  // namespace rtf
