// Seeds from a mask image or a sphere about a world coordinate.
#include "core/connectivity/seed.hpp"

#include <fmt/format.h>

#include <Eigen/LU>
#include <array>
#include <cmath>
#include <stdexcept>

namespace rtf {

std::vector<int32_t> seed_from_mask(const Image& mask, const ImageHeader& grid) {
  const ImageHeader& h = mask.header();
  if (h.num_volumes != 1)
    throw std::invalid_argument(fmt::format("seed mask: 3D expected, got {} volumes", h.num_volumes));
  if (!h.same_grid(grid)) {
    throw std::invalid_argument(
        fmt::format("seed mask: its grid ({}x{}x{}) is not the EPI grid ({}x{}x{}, same affine within 1e-4 mm); "
                    "resample the mask to the EPI first",
                    h.dims[0], h.dims[1], h.dims[2], grid.dims[0], grid.dims[1], grid.dims[2]));
  }
  if (grid.voxels_per_volume() >= (int64_t{1} << 31)) throw std::invalid_argument("seed mask: grid too large");
  std::vector<int32_t> voxels;
  for (size_t i = 0; i < mask.data().size(); ++i) {
    const float v = mask.data()[i];
    if (v != 0.0f && !std::isnan(v)) voxels.push_back(static_cast<int32_t>(i));
  }
  if (voxels.empty()) throw std::invalid_argument("seed mask: no nonzero voxel, the seed is empty");
  return voxels;
}

std::vector<int32_t> seed_from_sphere(const ImageHeader& grid, const Eigen::Vector3d& centre_mm, double radius_mm) {
  if (!(radius_mm >= 0.0 && std::isfinite(radius_mm))) {
    throw std::invalid_argument(fmt::format("seed sphere: radius {} mm", radius_mm));
  }
  if (!centre_mm.allFinite()) throw std::invalid_argument("seed sphere: the centre is not finite");
  if (!(std::abs(grid.affine.topLeftCorner<3, 3>().determinant()) > 1e-12)) {
    throw std::invalid_argument("seed sphere: the grid's affine is not invertible");
  }
  if (grid.voxels_per_volume() >= (int64_t{1} << 31)) throw std::invalid_argument("seed sphere: grid too large");
  const Eigen::Vector4d u = grid.affine.inverse() * Eigen::Vector4d(centre_mm.x(), centre_mm.y(), centre_mm.z(), 1.0);
  std::array<int64_t, 3> nearest{};
  bool centre_inside = true;
  for (int d = 0; d < 3; ++d) {
    const double r = std::floor(u[d] + 0.5);
    centre_inside = centre_inside && r >= 0.0 && r < static_cast<double>(grid.dims[static_cast<size_t>(d)]);
    nearest[static_cast<size_t>(d)] = static_cast<int64_t>(r);
  }
  const double r2 = radius_mm * radius_mm;
  std::vector<int32_t> voxels;
  int64_t index = 0;
  for (int64_t k = 0; k < grid.dims[2]; ++k) {
    for (int64_t j = 0; j < grid.dims[1]; ++j) {
      for (int64_t i = 0; i < grid.dims[0]; ++i, ++index) {
        const Eigen::Vector4d p(static_cast<double>(i), static_cast<double>(j), static_cast<double>(k), 1.0);
        const bool is_nearest = centre_inside && i == nearest[0] && j == nearest[1] && k == nearest[2];
        if (is_nearest || ((grid.affine * p).head<3>() - centre_mm).squaredNorm() <= r2) {
          voxels.push_back(static_cast<int32_t>(index));
        }
      }
    }
  }
  if (voxels.empty()) {
    throw std::invalid_argument(
        fmt::format("seed sphere: no voxel of the {}x{}x{} grid within {} mm of ({}, {}, {}) mm; the seed is empty",
                    grid.dims[0], grid.dims[1], grid.dims[2], radius_mm, centre_mm.x(), centre_mm.y(), centre_mm.z()));
  }
  return voxels;
}

}  // namespace rtf
