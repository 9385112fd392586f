// Registration test helpers: see registration_fixtures.hpp.
#include "tests/support/registration_fixtures.hpp"

#include <Eigen/Geometry>
#include <algorithm>

namespace rtf::test {

ImageHeader centred_grid(std::array<int64_t, 3> dims, std::array<double, 3> voxel_mm, const Eigen::Matrix3d& rotation,
                         const Eigen::Vector3d& centre) {
  ImageHeader h;
  h.dims = dims;
  h.voxel_mm = voxel_mm;
  h.affine.topLeftCorner<3, 3>() = rotation * Eigen::Vector3d(voxel_mm[0], voxel_mm[1], voxel_mm[2]).asDiagonal();
  const Eigen::Vector3d mid(0.5 * static_cast<double>(dims[0] - 1), 0.5 * static_cast<double>(dims[1] - 1),
                            0.5 * static_cast<double>(dims[2] - 1));
  h.affine.topRightCorner<3, 1>() = centre - h.affine.topLeftCorner<3, 3>() * mid;
  return h;
}

Eigen::Matrix3d rotation_about(double angle_rad, const Eigen::Vector3d& axis) {
  return Eigen::AngleAxisd(angle_rad, axis.normalized()).toRotationMatrix();
}

std::pair<double, double> errors_in_brain(const Image& image, const Eigen::Matrix4d& truth,
                                          const Eigen::Matrix4d& estimate) {
  double worst = 0.0, sum = 0.0;
  int64_t n = 0;
  for (int64_t z = 0; z < image.nz(); ++z) {
    for (int64_t y = 0; y < image.ny(); ++y) {
      for (int64_t x = 0; x < image.nx(); ++x) {
        if (!(image.at(x, y, z) > 0.0f)) continue;
        const Eigen::Vector4d world =
            image.header().affine *
            Eigen::Vector4d(static_cast<double>(x), static_cast<double>(y), static_cast<double>(z), 1.0);
        const double e = ((truth - estimate) * world).head<3>().norm();
        worst = std::max(worst, e);
        sum += e;
        ++n;
      }
    }
  }
  return {worst, n > 0 ? sum / static_cast<double>(n) : 0.0};
}

}  // namespace rtf::test
