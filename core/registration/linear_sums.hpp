// The sums of one iteration of linear registration (kernels/linear_register.cl): the 14 x 14 normal equations of the
// intensity-scaled least squares in (B, b, s, o) and the five sums that give the NCC of the overlap. Shared by the
// device, the double-precision reference and the Levenberg-Marquardt driver.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <span>

namespace rtf {

inline constexpr int kLinearSumParams = 14;  // B (9, row by row), b (3), intensity scale s, offset o
inline constexpr int kLinearSumTerms = kLinearSumParams * (kLinearSumParams + 1) / 2 + kLinearSumParams + 2 + 5;

struct LinearSums {
  Eigen::Matrix<double, kLinearSumParams, kLinearSumParams> h =
      Eigen::Matrix<double, kLinearSumParams, kLinearSumParams>::Zero();
  Eigen::Matrix<double, kLinearSumParams, 1> b = Eigen::Matrix<double, kLinearSumParams, 1>::Zero();
  double sum_squared_residual = 0.0;
  int64_t count = 0;
  double sum_f = 0.0, sum_ff = 0.0, sum_m = 0.0, sum_mm = 0.0, sum_fm = 0.0;

  // Pearson correlation of fixed and moving over the points used (0 when either is constant or none was used).
  double ncc() const;
  // The scale and offset minimising sum (s M + o - F)^2 over the points used (1, 0 when M is constant).
  std::pair<double, double> best_intensity() const;

  // From / to the flat layout of the kernel (kLinearSumTerms values).
  static LinearSums unpack(std::span<const double> terms);
  void add_point(const Eigen::Matrix<double, kLinearSumParams, 1>& j, double r, double f, double m);
};

}  // namespace rtf
