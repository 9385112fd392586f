// Host sampling with the device's conventions and a point through one transform: see point_sampling.hpp.
#include "core/registration/point_sampling.hpp"

#include <Eigen/Geometry>
#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <memory>
#include <variant>

#include "core/image/image.hpp"

namespace rtf {

namespace {

int64_t clamp_index(int64_t i, int64_t n) {
  return std::clamp<int64_t>(i, 0, n - 1);
}

double voxel(std::span<const float> volume, const std::array<int64_t, 3>& dims, int64_t x, int64_t y, int64_t z) {
  x = clamp_index(x, dims[0]);
  y = clamp_index(y, dims[1]);
  z = clamp_index(z, dims[2]);
  return volume[static_cast<size_t>((z * dims[1] + y) * dims[0] + x)];
}

// Keys cubic convolution kernel, a = -0.5.
double keys(double s) {
  s = std::abs(s);
  if (s < 1.0) return 1.5 * s * s * s - 2.5 * s * s + 1.0;
  if (s < 2.0) return -0.5 * s * s * s + 2.5 * s * s - 4.0 * s + 2.0;
  return 0.0;
}

}  // namespace

bool inside_volume(const std::array<int64_t, 3>& dims, const Eigen::Vector3d& u) {
  for (int a = 0; a < 3; ++a) {
    if (!(u[a] >= -0.5 && u[a] <= static_cast<double>(dims[static_cast<size_t>(a)]) - 0.5)) return false;
  }
  return true;
}

double sample_clamped(std::span<const float> volume, const std::array<int64_t, 3>& dims, const Eigen::Vector3d& u,
                      ResampleInterpolation interpolation) {
  Eigen::Vector3d c;
  for (int a = 0; a < 3; ++a) c[a] = std::clamp(u[a], 0.0, static_cast<double>(dims[static_cast<size_t>(a)] - 1));
  if (interpolation == ResampleInterpolation::kNearest) {
    return voxel(volume, dims, static_cast<int64_t>(std::floor(c[0] + 0.5)),
                 static_cast<int64_t>(std::floor(c[1] + 0.5)), static_cast<int64_t>(std::floor(c[2] + 0.5)));
  }
  const Eigen::Vector3d base = c.array().floor();
  const int64_t bx = static_cast<int64_t>(base[0]), by = static_cast<int64_t>(base[1]),
                bz = static_cast<int64_t>(base[2]);
  double sum = 0.0;
  if (interpolation == ResampleInterpolation::kLinear) {
    const Eigen::Vector3d f = c - base;
    for (int dz = 0; dz <= 1; ++dz) {
      for (int dy = 0; dy <= 1; ++dy) {
        for (int dx = 0; dx <= 1; ++dx) {
          const double w = (dx ? f[0] : 1.0 - f[0]) * (dy ? f[1] : 1.0 - f[1]) * (dz ? f[2] : 1.0 - f[2]);
          if (w != 0.0) sum += w * voxel(volume, dims, bx + dx, by + dy, bz + dz);
        }
      }
    }
    return sum;
  }
  for (int dz = -1; dz <= 2; ++dz) {
    for (int dy = -1; dy <= 2; ++dy) {
      for (int dx = -1; dx <= 2; ++dx) {
        const double w = keys(c[0] - static_cast<double>(bx + dx)) * keys(c[1] - static_cast<double>(by + dy)) *
                         keys(c[2] - static_cast<double>(bz + dz));
        sum += w * voxel(volume, dims, bx + dx, by + dy, bz + dz);
      }
    }
  }
  return sum;
}

Eigen::Vector3d transform_point(const SpatialTransform& transform, const Eigen::Vector3d& point) {
  if (const auto* affine = std::get_if<Eigen::Matrix4d>(&transform)) {
    return (*affine * point.homogeneous()).head<3>();
  }
  const Image& field = *std::get<std::shared_ptr<const Image>>(transform);
  const Eigen::Vector3d u = (field.header().affine.inverse() * point.homogeneous()).head<3>();
  if (!inside_volume(field.header().dims, u)) return point;  // no displacement outside the field
  Eigen::Vector3d d;
  for (int c = 0; c < 3; ++c) {
    d[c] = sample_clamped(field.volume(c), field.header().dims, u, ResampleInterpolation::kLinear);
  }
  return point + d;
}

}  // namespace rtf
