// Double-precision mutual information and its gradient: see mutual_information_reference.hpp.
#include "core/reference/mutual_information_reference.hpp"

#include <Eigen/LU>
#include <algorithm>
#include <cmath>

#include "core/reference/linear_registration_reference.hpp"

namespace rtf::reference {

namespace {

double bspline3(double t) {
  t = std::abs(t);
  if (t < 1.0) return (4.0 - 6.0 * t * t + 3.0 * t * t * t) / 6.0;
  if (t < 2.0) return (2.0 - t) * (2.0 - t) * (2.0 - t) / 6.0;
  return 0.0;
}

double bspline3_derivative(double t) {
  const double a = std::abs(t);
  if (a < 1.0) return -2.0 * t + 1.5 * t * a;
  if (a < 2.0) return (t > 0.0 ? -0.5 : 0.5) * (2.0 - a) * (2.0 - a);
  return 0.0;
}

struct Sample {
  int a = 0;          // fixed bin
  double e = 0.0;     // moving bin coordinate
  Eigen::Vector3d g;  // moving world gradient
  Eigen::Vector3d d;  // X - centre
};

}  // namespace

MiEvaluation mutual_information(const Image& fixed, const Image& moving, std::optional<std::span<const uint8_t>> mask,
                                int stride, const Eigen::Matrix4d& transform, const Eigen::Vector3d& centre,
                                const MiBinning& binning, std::vector<double>* histogram) {
  std::vector<Sample> samples;
  for_each_sample_point(
      fixed, moving, mask, stride, transform,
      [&](const Eigen::Vector3d& world, size_t index, const Eigen::Vector4d& gm) {
        Sample s;
        s.a = std::clamp(static_cast<int>(std::floor((fixed.data()[index] - binning.fixed_min) * binning.fixed_inv)), 0,
                         kMiBins - 1);
        s.e =
            std::clamp(2.0 + (gm[3] - binning.moving_min) * binning.moving_inv, 2.0, static_cast<double>(kMiBins - 3));
        s.g = gm.head<3>();
        s.d = world - centre;
        samples.push_back(s);
      });
  std::vector<double> joint(static_cast<size_t>(kMiBins * kMiBins), 0.0);
  for (const Sample& s : samples) {
    const int k0 = static_cast<int>(std::floor(s.e));
    for (int k = k0 - 1; k <= k0 + 2; ++k)
      joint[static_cast<size_t>(s.a) * kMiBins + static_cast<size_t>(k)] += bspline3(k - s.e);
  }
  MiEvaluation result;
  result.count = static_cast<int64_t>(samples.size());
  std::vector<double> log_ratio;
  result.mi = rtf::mutual_information(joint, kMiBins, &log_ratio);
  if (histogram) *histogram = joint;
  if (samples.empty()) return result;
  for (const Sample& s : samples) {
    const int k0 = static_cast<int>(std::floor(s.e));
    double q = 0.0;
    for (int k = k0 - 1; k <= k0 + 2; ++k) {
      q += bspline3_derivative(s.e - k) * log_ratio[static_cast<size_t>(s.a) * kMiBins + static_cast<size_t>(k)];
    }
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) result.gradient[3 * r + c] += q * s.g[r] * s.d[c];
      result.gradient[9 + r] += q * s.g[r];
    }
  }
  result.gradient *= binning.moving_inv / static_cast<double>(result.count);
  return result;
}

}  // namespace rtf::reference
