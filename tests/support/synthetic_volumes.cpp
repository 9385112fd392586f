// Synthetic blob volumes on an oblique grid for registration tests.
#include "tests/support/synthetic_volumes.hpp"

#include <Eigen/Geometry>
#include <Eigen/LU>
#include <cmath>
#include <random>

namespace rtf::test {

ImageHeader oblique_header(std::array<int64_t, 3> dims) {
  ImageHeader h;
  h.dims = dims;
  h.voxel_mm = {3.0, 3.0, 3.5};
  const Eigen::Matrix3d r = Eigen::AngleAxisd(0.15, Eigen::Vector3d(0.3, -0.2, 1.0).normalized()).toRotationMatrix();
  h.affine.topLeftCorner<3, 3>() = r * Eigen::Vector3d(3.0, 3.0, 3.5).asDiagonal();
  h.affine.topRightCorner<3, 1>() =
      -h.affine.topLeftCorner<3, 3>() *
      Eigen::Vector3d(double(dims[0] - 1) / 2, double(dims[1] - 1) / 2, double(dims[2] - 1) / 2);
  return h;
}

std::vector<float> blobs(const ImageHeader& h, uint32_t seed, const Eigen::Matrix4d& t,
                         const Eigen::Vector3d& shading) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> pos(-25, 25), width(6, 12), amp(200, 600);
  std::vector<Eigen::Vector4d> b;
  std::vector<double> a;
  b.emplace_back(0, 0, 0, 12);
  a.push_back(800);
  for (int i = 0; i < 8; ++i) {
    b.emplace_back(pos(rng), pos(rng), pos(rng) * 0.6, width(rng));
    a.push_back(amp(rng));
  }
  const Eigen::Matrix4d t_inv = t.inverse();
  std::vector<float> out;
  out.reserve(static_cast<size_t>(h.voxels_per_volume()));
  for (int64_t z = 0; z < h.dims[2]; ++z) {
    for (int64_t y = 0; y < h.dims[1]; ++y) {
      for (int64_t x = 0; x < h.dims[0]; ++x) {
        const Eigen::Vector4d w = h.affine * Eigen::Vector4d(double(x), double(y), double(z), 1);
        const Eigen::Vector3d p = (t_inv * w).head<3>();
        double v = 0;
        for (size_t i = 0; i < b.size(); ++i) {
          v += a[i] * std::exp(-(p - b[i].head<3>()).squaredNorm() / (2 * b[i][3] * b[i][3]));
        }
        out.push_back(static_cast<float>(v * (1.0 + shading.dot(w.head<3>()) / 50.0)));
      }
    }
  }
  return out;
}

}  // namespace rtf::test
