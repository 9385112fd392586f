// Helpers for the phantom tests: a small synthetic brain-extracted "T1" (so geometry tests run without installed
// data), the small test grid (24x28x17 at 6 mm), and time-series statistics (detrended tSNR, correlation).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/image/image.hpp"
#include "core/temporal/detrend_basis.hpp"
#include "sim/phantom/phantom_spec.hpp"

namespace rtf::test {

// 100 x 120 x 90 mm at 1 mm, world origin at voxel (50, 70, 40): an ellipsoidal brain (semi-axes 42, 56, 38 mm)
// with a folded white-matter core (T1 110), a grey-matter shell (85), two CSF ventricles (50) and sulci of CSF
// reaching in from the surface; background 0.
inline Image synthetic_t1() {
  ImageHeader h;
  h.dims = {100, 120, 90};
  h.voxel_mm = {1.0, 1.0, 1.0};
  h.affine = Eigen::Matrix4d::Identity();
  h.affine(0, 3) = -50.0;
  h.affine(1, 3) = -70.0;
  h.affine(2, 3) = -40.0;
  h.xform_code = 4;
  Image img(h);
  for (int64_t z = 0; z < h.dims[2]; ++z) {
    for (int64_t y = 0; y < h.dims[1]; ++y) {
      for (int64_t x = 0; x < h.dims[0]; ++x) {
        const double wx = static_cast<double>(x) - 50.0, wy = static_cast<double>(y) - 70.0 + 10.0,
                     wz = static_cast<double>(z) - 40.0 - 5.0;
        const double r = std::sqrt(wx * wx / (42.0 * 42.0) + wy * wy / (56.0 * 56.0) + wz * wz / (38.0 * 38.0));
        if (r >= 1.0) continue;
        const double fold = 0.08 * std::sin(0.35 * wx) * std::sin(0.3 * wy) * std::sin(0.33 * wz);
        const double depth_mm = (1.0 - r) * 40.0;  // approximate distance from the surface
        double v = 85.0;
        if (r < 0.72 + fold) v = 110.0;
        // Sulci: thin CSF sheets near the surface.
        if (depth_mm < 8.0 && std::abs(std::sin(0.25 * wx + 0.15 * wy)) < 0.12) v = 50.0;
        // Ventricles.
        for (double side : {-1.0, 1.0}) {
          const double vx = wx - side * 8.0, vy = wy + 5.0, vz = wz - 8.0;
          if (vx * vx / 16.0 + vy * vy / 400.0 + vz * vz / 36.0 < 1.0) v = 50.0;
        }
        img.at(x, y, z) = static_cast<float>(v + 3.0 * std::sin(0.9 * wx + 0.7 * wy + 1.1 * wz));
      }
    }
  }
  return img;
}

inline sim::PhantomSpec small_spec() {
  sim::PhantomSpec s;
  s.grid = {24, 28, 17};
  s.voxel_mm = {6.0, 6.0, 6.0};
  s.volumes = 40;
  s.tr_s = 2.0;
  s.block_on_s = 16.0;
  s.block_off_s = 16.0;
  s.seed = 12345;
  s.threads = 2;
  return s;
}

// Residual of each voxel's series after removing constant, linear and quadratic trends; returns mean / sd.
inline double detrended_tsnr(const Image& bold, int64_t voxel) {
  const int64_t n = bold.nt(), nv = bold.header().voxels_per_volume();
  const Eigen::MatrixXd q = orthonormal_basis(legendre_basis(n, 2));
  Eigen::VectorXd y(n);
  for (int64_t t = 0; t < n; ++t) y[t] = bold.data()[static_cast<size_t>(t * nv + voxel)];
  const Eigen::VectorXd residual = y - q * (q.transpose() * y);
  const double sd = std::sqrt(residual.squaredNorm() / static_cast<double>(n - 3));
  return y.mean() / sd;
}

inline double correlation(const std::vector<double>& a, const std::vector<double>& b) {
  const auto n = static_cast<double>(a.size());
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i] / n, mb += b[i] / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

inline std::vector<double> series(const Image& bold, int64_t voxel) {
  const int64_t nv = bold.header().voxels_per_volume();
  std::vector<double> s(static_cast<size_t>(bold.nt()));
  for (int64_t t = 0; t < bold.nt(); ++t) s[static_cast<size_t>(t)] = bold.data()[static_cast<size_t>(t * nv + voxel)];
  return s;
}

// The series minus its least-squares constant, linear and quadratic trend.
inline std::vector<double> detrended(const std::vector<double>& y) {
  const auto n = static_cast<int64_t>(y.size());
  const Eigen::MatrixXd q = orthonormal_basis(legendre_basis(n, 2));
  const Eigen::VectorXd v = Eigen::Map<const Eigen::VectorXd>(y.data(), n);
  const Eigen::VectorXd r = v - q * (q.transpose() * v);
  return std::vector<double>(r.data(), r.data() + n);
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace rtf::test
