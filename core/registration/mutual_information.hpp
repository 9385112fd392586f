// Mutual information from a joint histogram (Mattes et al. 2003: a box window on the fixed intensities, a cubic
// B-spline Parzen window on the moving ones; kernels/mutual_information.cl), shared by the device and the
// double-precision reference: the binning of intensities, MI, and the table log(p(a, k) / p_M(k)) the gradient needs.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <span>
#include <vector>

namespace rtf {

inline constexpr int kMiBins = 32;

// Fixed bin a = clamp(floor((F - fixed_min) * fixed_inv), 0, bins - 1); moving bin coordinate
// e = clamp(2 + (M - moving_min) * moving_inv, 2, bins - 3).
struct MiBinning {
  double fixed_min = 0.0, fixed_inv = 1.0, moving_min = 0.0, moving_inv = 1.0;
};

// The binning for the given intensity ranges (a degenerate range is widened to 1).
MiBinning mi_binning(double fixed_min, double fixed_max, double moving_min, double moving_max, int bins = kMiBins);

struct MiEvaluation {
  double mi = 0.0;  // nats
  int64_t count = 0;
  Eigen::Matrix<double, 12, 1> gradient = Eigen::Matrix<double, 12, 1>::Zero();  // dMI/d(B row by row, b)
};

// MI of a joint histogram (bins x bins, row a = fixed bin; unnormalised); fills `log_ratio` (bins x bins) with
// log(p(a, k) / p_M(k)), 0 where p(a, k) = 0, when it is given.
double mutual_information(std::span<const double> histogram, int bins, std::vector<double>* log_ratio = nullptr);

}  // namespace rtf
