// The phantom's EPI grid: axial, RAS-aligned voxels (affine diag(voxel) + origin) whose centre sits at a
// chosen world point, by default on the template's brain.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <optional>

#include "core/image/image.hpp"
#include "sim/phantom/tissue_model.hpp"

namespace rtf::sim {

struct EpiGrid {
  std::array<int64_t, 3> dims{64, 64, 33};
  std::array<double, 3> voxel_mm{3.0, 3.0, 3.0};
  Eigen::Matrix4d affine = Eigen::Matrix4d::Identity();  // voxel (i, j, k, 1) -> world mm (RAS)
  Eigen::Vector3d centre_mm = Eigen::Vector3d::Zero();   // world mm of voxel ((n-1)/2, ...): the motion centre

  int64_t voxels() const { return dims[0] * dims[1] * dims[2]; }
  // A header for images on this grid (xform code 1: scanner space).
  ImageHeader header(int64_t volumes, double tr_s) const;
};

// The default grid centre: the centre of the brain's bounding box in x and y; in z as well when the field of
// view covers the brain's height, else the centre of the top slice lies 3 mm above the top of the brain
// (the cortex is kept and the cerebellum cut, as an axial EPI prescription would).
Eigen::Vector3d default_grid_centre(const TissueModel& tissue, const std::array<int64_t, 3>& dims,
                                    const std::array<double, 3>& voxel_mm);

EpiGrid make_epi_grid(const std::array<int64_t, 3>& dims, const std::array<double, 3>& voxel_mm,
                      const Eigen::Vector3d& centre_mm);

}  // namespace rtf::sim
