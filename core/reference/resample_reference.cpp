// Double-precision resampling reference: see resample_reference.hpp.
#include "core/reference/resample_reference.hpp"

#include <Eigen/Geometry>
#include <Eigen/LU>
#include <algorithm>
#include <cmath>

namespace rtf::reference {

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

Image resample(const Image& input, const ImageHeader& reference, const std::vector<SpatialTransform>& chain,
               ResampleInterpolation interpolation, double outside) {
  ImageHeader h = input.header();
  h.dims = reference.dims;
  h.voxel_mm = reference.voxel_mm;
  h.affine = reference.affine;
  h.xform_code = reference.xform_code;
  Image out(h);
  const Eigen::Matrix4d to_input = input.header().affine.inverse();
  const auto& dims = input.header().dims;
  for (int64_t z = 0; z < reference.dims[2]; ++z) {
    for (int64_t y = 0; y < reference.dims[1]; ++y) {
      for (int64_t x = 0; x < reference.dims[0]; ++x) {
        Eigen::Vector3d p = (reference.affine * Eigen::Vector4d(static_cast<double>(x), static_cast<double>(y),
                                                                static_cast<double>(z), 1.0))
                                .head<3>();
        for (const SpatialTransform& t : chain) p = transform_point(t, p);
        const Eigen::Vector3d u = (to_input * p.homogeneous()).head<3>();
        const bool inside = inside_volume(dims, u);
        for (int64_t t = 0; t < input.nt(); ++t) {
          out.at(x, y, z, t) =
              static_cast<float>(inside ? sample_clamped(input.volume(t), dims, u, interpolation) : outside);
        }
      }
    }
  }
  return out;
}

}  // namespace rtf::reference
