// Fisher's z transform of a correlation, z = atanh(r), with the convention shared by the device kernels
// (kernels/connectivity_compensated.clh), the host ROI matrices and the double-precision reference: |r| is clamped to
// 1 - 2^-24 (the largest float below 1) so that r = +-1 (a voxel identical to the seed, a matrix diagonal) gives a
// finite z = +-8.664 rather than +-inf, which JSON outputs and viewers could not carry; NaN stays NaN.
#pragma once

#include <algorithm>
#include <cmath>

namespace rtf {

inline constexpr double kMaxAbsCorrelation = 1.0 - 0x1p-24;

inline double fisher_z(double r) {
  if (std::isnan(r)) return r;
  return std::atanh(std::clamp(r, -kMaxAbsCorrelation, kMaxAbsCorrelation));
}

}  // namespace rtf
