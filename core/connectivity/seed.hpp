// Seeds of seed correlation maps: the EPI voxels whose mean, per volume, is the seed's time course. A seed is a mask
// (every nonzero voxel of a mask image on the EPI grid) or a sphere about a world coordinate.
// docs/algorithms/connectivity.md.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "core/image/image.hpp"

namespace rtf {

// Voxel indices (x fastest, ascending) of the nonzero voxels of `mask` (NaN counts as zero). The mask must be a 3D
// image on `grid` (same dims and affine within 1e-4 mm); otherwise, or when no voxel is nonzero,
// std::invalid_argument says so.
std::vector<int32_t> seed_from_mask(const Image& mask, const ImageHeader& grid);

// Voxel indices (ascending) of the voxels of `grid` whose centres lie within `radius_mm` of `centre_mm` (world mm,
// through grid.affine), plus the voxel nearest the centre when the centre lies inside the grid: a radius of 0 selects
// the voxel containing the point. Throws std::invalid_argument for a negative or non-finite radius, a non-invertible
// affine, or a sphere that contains no voxel (the centre outside the grid by more than the radius).
std::vector<int32_t> seed_from_sphere(const ImageHeader& grid, const Eigen::Vector3d& centre_mm, double radius_mm);

}  // namespace rtf
