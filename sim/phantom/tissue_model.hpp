// Tissue model of the phantom: a brain-extracted T1 template split into CSF / GM / WM by 3-class k-means on
// the brain's intensities, with soft (partial-volume) fractions per template voxel, cropped to the brain.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <vector>

#include "core/image/image.hpp"

namespace rtf::sim {

enum TissueClass : int { kCsf = 0, kGm = 1, kWm = 2 };

struct TissueModel {
  // Cropped template grid: the brain's bounding box plus a margin of empty voxels, so that anything sampled
  // outside it is background. affine maps (i, j, k, 1) of the crop to world mm.
  std::array<int64_t, 3> dims{0, 0, 0};
  Eigen::Matrix4d affine = Eigen::Matrix4d::Identity();
  // Fractions CSF, GM, WM per voxel (x fastest), summing to 1 in the brain and 0 outside it.
  std::vector<std::array<float, 3>> fractions;
  // k-means centres (T1 intensity, ascending: CSF < GM < WM) and brain voxel counts per hard class.
  std::array<double, 3> centres{0.0, 0.0, 0.0};
  std::array<int64_t, 3> counts{0, 0, 0};
  int64_t brain_voxels = 0;
  // World-mm bounding box of the brain voxels (min and max corner voxel centres).
  Eigen::Vector3d brain_min_mm = Eigen::Vector3d::Zero();
  Eigen::Vector3d brain_max_mm = Eigen::Vector3d::Zero();

  int64_t voxels() const { return dims[0] * dims[1] * dims[2]; }
};

// Three-class k-means (Lloyd's algorithm on a 1024-bin histogram, initialised at the 10th, 50th and 90th
// percentiles) of the values in `values`; returns ascending centres. Throws std::invalid_argument when
// there are fewer than 3 distinct values.
std::array<double, 3> kmeans3(const std::vector<float>& values);

// Partial-volume fractions of a T1 intensity: piecewise linear between adjacent centres (1 at its own
// centre, 0 at the neighbours'), so the class with the largest fraction is the nearest centre.
std::array<float, 3> tissue_fractions(double t1, const std::array<double, 3>& centres);

// Classifies a brain-extracted T1 (brain: finite values > 0; 3D, or volume 0 of 4D). Throws
// std::invalid_argument when the image has no brain voxels.
TissueModel build_tissue_model(const Image& t1);

}  // namespace rtf::sim
