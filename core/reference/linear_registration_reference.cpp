// Double-precision linear registration sums: see linear_registration_reference.hpp.
#include "core/reference/linear_registration_reference.hpp"

#include <Eigen/LU>
#include <array>
#include <vector>

namespace rtf::reference {

std::vector<Eigen::Vector4d> gradient_and_value(const Image& moving) {
  const auto& d = moving.header().dims;
  const Eigen::Matrix3d to_world = moving.header().affine.topLeftCorner<3, 3>().inverse().transpose();
  std::vector<Eigen::Vector4d> out(static_cast<size_t>(moving.header().voxels_per_volume()));
  for (int64_t z = 0; z < d[2]; ++z) {
    for (int64_t y = 0; y < d[1]; ++y) {
      for (int64_t x = 0; x < d[0]; ++x) {
        Eigen::Vector3d g = Eigen::Vector3d::Zero();
        if (x > 0 && y > 0 && z > 0 && x < d[0] - 1 && y < d[1] - 1 && z < d[2] - 1) {
          const Eigen::Vector3d voxel_gradient(0.5 * (moving.at(x + 1, y, z) - moving.at(x - 1, y, z)),
                                               0.5 * (moving.at(x, y + 1, z) - moving.at(x, y - 1, z)),
                                               0.5 * (moving.at(x, y, z + 1) - moving.at(x, y, z - 1)));
          g = to_world * voxel_gradient;
        }
        out[static_cast<size_t>((z * d[1] + y) * d[0] + x)] = Eigen::Vector4d(g[0], g[1], g[2], moving.at(x, y, z));
      }
    }
  }
  return out;
}

Eigen::Vector4d trilinear4(const std::vector<Eigen::Vector4d>& volume, const std::array<int64_t, 3>& d,
                           const Eigen::Vector3d& u) {
  const Eigen::Vector3d base = u.array().floor();
  Eigen::Vector4d sum = Eigen::Vector4d::Zero();
  for (int dz = 0; dz <= 1; ++dz) {
    for (int dy = 0; dy <= 1; ++dy) {
      for (int dx = 0; dx <= 1; ++dx) {
        const Eigen::Vector3d f = u - base;
        const double w = (dx ? f[0] : 1.0 - f[0]) * (dy ? f[1] : 1.0 - f[1]) * (dz ? f[2] : 1.0 - f[2]);
        if (w == 0.0) continue;
        const int64_t x = std::min<int64_t>(static_cast<int64_t>(base[0]) + dx, d[0] - 1);
        const int64_t y = std::min<int64_t>(static_cast<int64_t>(base[1]) + dy, d[1] - 1);
        const int64_t z = std::min<int64_t>(static_cast<int64_t>(base[2]) + dz, d[2] - 1);
        sum += w * volume[static_cast<size_t>((z * d[1] + y) * d[0] + x)];
      }
    }
  }
  return sum;
}

void for_each_sample_point(
    const Image& fixed, const Image& moving, std::optional<std::span<const uint8_t>> mask, int stride,
    const Eigen::Matrix4d& transform,
    const std::function<void(const Eigen::Vector3d& world, size_t fixed_index, const Eigen::Vector4d& gm)>& visit) {
  const std::vector<Eigen::Vector4d> movgrad = gradient_and_value(moving);
  const auto& fd = fixed.header().dims;
  const auto& md = moving.header().dims;
  const Eigen::Matrix4d to_moving = moving.header().affine.inverse() * transform;
  for (int64_t z = 0; z < fd[2]; z += stride) {
    for (int64_t y = 0; y < fd[1]; y += stride) {
      for (int64_t x = 0; x < fd[0]; x += stride) {
        const auto index = static_cast<size_t>((z * fd[1] + y) * fd[0] + x);
        if (mask && (*mask)[index] == 0) continue;
        const Eigen::Vector4d world =
            fixed.header().affine *
            Eigen::Vector4d(static_cast<double>(x), static_cast<double>(y), static_cast<double>(z), 1.0);
        const Eigen::Vector3d u = (to_moving * world).head<3>();
        bool inside = true;
        for (int a = 0; a < 3; ++a) inside = inside && u[a] >= 0.0 && u[a] <= static_cast<double>(md[a] - 1);
        if (inside) visit(world.head<3>(), index, trilinear4(movgrad, md, u));
      }
    }
  }
}

LinearSums linear_sums(const Image& fixed, const Image& moving, std::optional<std::span<const uint8_t>> mask,
                       int stride, const Eigen::Matrix4d& transform, const Eigen::Vector3d& centre, double scale,
                       double offset) {
  LinearSums sums;
  for_each_sample_point(fixed, moving, mask, stride, transform,
                        [&](const Eigen::Vector3d& world, size_t index, const Eigen::Vector4d& gm) {
                          const Eigen::Vector3d g = scale * gm.head<3>();
                          const Eigen::Vector3d d = world - centre;
                          Eigen::Matrix<double, kLinearSumParams, 1> j;
                          for (int r = 0; r < 3; ++r) {
                            for (int c = 0; c < 3; ++c) j[3 * r + c] = g[r] * d[c];
                          }
                          j.segment<3>(9) = g;
                          j[12] = gm[3];
                          j[13] = 1.0;
                          const double f = fixed.data()[index];
                          sums.add_point(j, scale * gm[3] + offset - f, f, gm[3]);
                        });
  return sums;
}

}  // namespace rtf::reference
