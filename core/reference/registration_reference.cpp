// Double-precision reference: registration sums and trilinear reslicing.
#include "core/reference/registration_reference.hpp"

#include <Eigen/Geometry>
#include <Eigen/LU>
#include <algorithm>
#include <cmath>

#include "core/filters/gaussian_taps.hpp"
#include "core/reference/smoothing_reference.hpp"

namespace rtf::reference {

namespace {

int64_t at(const std::array<int64_t, 3>& dims, int64_t x, int64_t y, int64_t z) {
  return (z * dims[1] + y) * dims[0] + x;
}

}  // namespace

std::optional<double> trilinear(std::span<const float> volume, const std::array<int64_t, 3>& dims,
                                const Eigen::Vector3d& u) {
  for (int a = 0; a < 3; ++a) {
    if (!(u[a] >= 0.0 && u[a] <= static_cast<double>(dims[a] - 1))) return std::nullopt;
  }
  std::array<int64_t, 3> i0{};
  std::array<double, 3> f{};
  for (int a = 0; a < 3; ++a) {
    i0[a] = std::min(static_cast<int64_t>(std::floor(u[a])), std::max<int64_t>(dims[a] - 2, 0));
    f[a] = u[a] - static_cast<double>(i0[a]);
  }
  double sum = 0.0;
  for (int dz = 0; dz < 2; ++dz) {
    for (int dy = 0; dy < 2; ++dy) {
      for (int dx = 0; dx < 2; ++dx) {
        const double w = (dx ? f[0] : 1 - f[0]) * (dy ? f[1] : 1 - f[1]) * (dz ? f[2] : 1 - f[2]);
        if (w == 0.0) continue;
        const int64_t x = std::min(i0[0] + dx, dims[0] - 1);
        const int64_t y = std::min(i0[1] + dy, dims[1] - 1);
        const int64_t z = std::min(i0[2] + dz, dims[2] - 1);
        sum += w * volume[static_cast<size_t>(at(dims, x, y, z))];
      }
    }
  }
  return sum;
}

// Keys (1981) cubic convolution weights, a = -0.5, for the 4 samples at offsets -1, 0, 1, 2 from floor(u).
static std::array<double, 4> cubic_weights(double f) {
  const double a = -0.5;
  auto w = [a](double t) {
    t = std::abs(t);
    if (t < 1) return (a + 2) * t * t * t - (a + 3) * t * t + 1;
    if (t < 2) return a * t * t * t - 5 * a * t * t + 8 * a * t - 4 * a;
    return 0.0;
  };
  return {w(1 + f), w(f), w(1 - f), w(2 - f)};
}

std::optional<double> tricubic(std::span<const float> volume, const std::array<int64_t, 3>& dims,
                               const Eigen::Vector3d& u) {
  for (int a = 0; a < 3; ++a) {
    if (!(u[a] >= 1.0 && u[a] <= static_cast<double>(dims[a] - 2))) return std::nullopt;
  }
  std::array<int64_t, 3> i0{};
  std::array<std::array<double, 4>, 3> w{};
  for (int a = 0; a < 3; ++a) {
    i0[a] = std::min(static_cast<int64_t>(std::floor(u[a])), dims[a] - 3);
    w[a] = cubic_weights(u[a] - static_cast<double>(i0[a]));
  }
  double sum = 0.0;
  for (int dz = -1; dz <= 2; ++dz) {
    for (int dy = -1; dy <= 2; ++dy) {
      for (int dx = -1; dx <= 2; ++dx) {
        sum += w[0][dx + 1] * w[1][dy + 1] * w[2][dz + 1] *
               volume[static_cast<size_t>(at(dims, i0[0] + dx, i0[1] + dy, i0[2] + dz))];
      }
    }
  }
  return sum;
}

std::vector<float> fill_non_finite(std::span<const float> volume, const std::array<int64_t, 3>& dims) {
  std::vector<float> out(volume.begin(), volume.end());
  for (int64_t z = 0; z < dims[2]; ++z) {
    for (int64_t y = 0; y < dims[1]; ++y) {
      for (int64_t x = 0; x < dims[0]; ++x) {
        const auto i = static_cast<size_t>(at(dims, x, y, z));
        if (std::isfinite(volume[i])) continue;
        double sum = 0.0;
        int n = 0;
        for (int64_t zz = std::max<int64_t>(z - 1, 0); zz <= std::min(z + 1, dims[2] - 1); ++zz) {
          for (int64_t yy = std::max<int64_t>(y - 1, 0); yy <= std::min(y + 1, dims[1] - 1); ++yy) {
            for (int64_t xx = std::max<int64_t>(x - 1, 0); xx <= std::min(x + 1, dims[0] - 1); ++xx) {
              const float w = volume[static_cast<size_t>(at(dims, xx, yy, zz))];
              if (std::isfinite(w)) {
                sum += w;
                ++n;
              }
            }
          }
        }
        out[i] = n > 0 ? static_cast<float>(sum / n) : 0.0f;
      }
    }
  }
  return out;
}

NormalEquations registration_sums(std::span<const float> reference_in, std::span<const float> moving_in,
                                  const RegistrationGrid& grid, const Eigen::Matrix4d& world_transform,
                                  const Eigen::Vector3d& centre_mm, int stride,
                                  std::optional<std::span<const uint8_t>> mask, bool intensity_model,
                                  const Eigen::Vector4d& lambda, double radius_mm, Interpolation interpolation) {
  const std::vector<float> reference_finite = fill_non_finite(reference_in, grid.dims);
  const std::vector<float> moving_finite = fill_non_finite(moving_in, grid.dims);
  const std::span<const float> reference(reference_finite), moving(moving_finite);
  const auto& n = grid.dims;
  const Eigen::Matrix3d a3 = grid.affine.topLeftCorner<3, 3>();
  const Eigen::Matrix3d a3_inv_t = a3.inverse().transpose();
  const Eigen::Matrix4d to_moving_voxel = grid.affine.inverse() * world_transform;
  const int params = intensity_model ? kMaxParams : kRigidParams;
  NormalEquations eq;
  for (int64_t z = 1; z < n[2] - 1; z += stride) {
    for (int64_t y = 1; y < n[1] - 1; y += stride) {
      for (int64_t x = 1; x < n[0] - 1; x += stride) {
        const int64_t i = at(n, x, y, z);
        if (mask && (*mask)[static_cast<size_t>(i)] == 0) continue;
        const Eigen::Vector4d v(static_cast<double>(x), static_cast<double>(y), static_cast<double>(z), 1.0);
        const Eigen::Vector4d u = to_moving_voxel * (grid.affine * v);
        const std::optional<double> m = interpolation == Interpolation::kCubic ? tricubic(moving, n, u.head<3>())
                                                                               : trilinear(moving, n, u.head<3>());
        if (!m) continue;
        auto ref = [&](int64_t xx, int64_t yy, int64_t zz) {
          return static_cast<double>(reference[static_cast<size_t>(at(n, xx, yy, zz))]);
        };
        const Eigen::Vector3d grad_voxel(0.5 * (ref(x + 1, y, z) - ref(x - 1, y, z)),
                                         0.5 * (ref(x, y + 1, z) - ref(x, y - 1, z)),
                                         0.5 * (ref(x, y, z + 1) - ref(x, y, z - 1)));
        const Eigen::Vector3d g = a3_inv_t * grad_voxel;
        const Eigen::Vector3d d = (grid.affine * v).head<3>() - centre_mm;
        const double t = ref(x, y, z);
        Eigen::Matrix<double, kMaxParams, 1> j = Eigen::Matrix<double, kMaxParams, 1>::Zero();
        j.head<3>() = g;
        j.segment<3>(3) = d.cross(g);
        double predicted = t;
        if (intensity_model) {
          const Eigen::Vector4d phi(1.0, d.x() / radius_mm, d.y() / radius_mm, d.z() / radius_mm);
          j.tail<4>() = t * phi;
          predicted = t * (1.0 + lambda.dot(phi));
        }
        const double r = *m - predicted;
        eq.h.topLeftCorner(params, params) += j.head(params) * j.head(params).transpose();
        eq.b.head(params) += j.head(params) * r;
        eq.sum_squared_residual += r * r;
        ++eq.count;
      }
    }
  }
  return eq;
}

std::vector<double> reslice(std::span<const float> moving, const RegistrationGrid& grid,
                            const Eigen::Matrix4d& world_transform, double outside, Interpolation interpolation) {
  const auto& n = grid.dims;
  const Eigen::Matrix4d to_moving_voxel = grid.affine.inverse() * world_transform * grid.affine;
  std::vector<double> out(static_cast<size_t>(n[0] * n[1] * n[2]), outside);
  for (int64_t z = 0; z < n[2]; ++z) {
    for (int64_t y = 0; y < n[1]; ++y) {
      for (int64_t x = 0; x < n[0]; ++x) {
        const Eigen::Vector4d u = to_moving_voxel * Eigen::Vector4d(static_cast<double>(x), static_cast<double>(y),
                                                                    static_cast<double>(z), 1);
        std::optional<double> m;
        if (interpolation == Interpolation::kCubic) m = tricubic(moving, n, u.head<3>());
        if (!m) m = trilinear(moving, n, u.head<3>());  // also cubic's fallback within a voxel of the edge
        if (m) out[static_cast<size_t>(at(n, x, y, z))] = *m;
      }
    }
  }
  return out;
}

RegistrationResult register_rigid(std::span<const float> reference, std::span<const float> moving,
                                  const RegistrationGrid& grid, const RegistrationOptions& options,
                                  const Eigen::Matrix4d& initial, const Eigen::Vector3d& centre_mm,
                                  std::optional<std::span<const uint8_t>> mask) {
  std::vector<std::vector<float>> refs, movs;
  for (const RegistrationLevel& level : options.levels) {
    std::array<std::vector<double>, 3> taps;
    for (int a = 0; a < 3; ++a) {
      const double voxel = grid.affine.col(a).head<3>().norm();
      taps[static_cast<size_t>(a)] = gaussian_taps(fwhm_to_sigma(level.smoothing_fwhm_mm) / voxel);
    }
    auto smooth = [&](std::span<const float> v) {
      const std::vector<double> s = smooth_volume(v, grid.dims, taps);
      return std::vector<float>(s.begin(), s.end());
    };
    refs.push_back(smooth(reference));
    movs.push_back(smooth(moving));
  }
  const SumsProvider sums = [&](int level, const Eigen::Matrix4d& transform, const Eigen::Vector4d& intensity) {
    const auto l = static_cast<size_t>(level);
    return registration_sums(refs[l], movs[l], grid, transform, centre_mm, options.levels[l].stride, mask,
                             options.intensity_model, intensity, options.radius_mm, options.levels[l].interpolation);
  };
  return gauss_newton_register(sums, options, initial, centre_mm);
}

}  // namespace rtf::reference
