// A known-answer case for non-linear registration: a template deformed by a random smooth diffeomorphism (the
// exponential of a stationary velocity field made of Gaussian bumps) and an affine, resampled onto a subject grid.
// The truth maps a template point x to the subject point A (x + u(x)); the subject image is the template pulled
// through the inverse, S(y) = T(w(A^-1 y)) with w = exp(-v). Used by the normalisation tests and benchmark
// (docs/algorithms/normalization.md).
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/device/device.hpp"
#include "core/image/image.hpp"
#include "core/registration/displacement_field.hpp"

namespace rtf::sim {

struct WarpPhantomSpec {
  double max_displacement_mm = 8.0;  // the largest |u(x)|, approximately (the velocity's largest vector)
  double bump_sigma_mm = 15.0;       // smoothness of the velocity field (Gaussian bumps of this sigma)
  int bumps = 60;                    // bumps, centred on random voxels of the template's brain (voxels > 0)
  uint64_t seed = 1;
  Eigen::Matrix4d affine = Eigen::Matrix4d::Identity();  // template world -> subject world
  ImageHeader subject_grid;                              // the subject image's grid (3D)
};

struct WarpPhantom {
  Eigen::Matrix4d affine = Eigen::Matrix4d::Identity();
  std::shared_ptr<const Image> warp, inverse_warp;  // exp(v), exp(-v) on the template's grid, RAS mm (3 volumes)
  Image subject;

  std::vector<SpatialTransform> template_to_subject() const { return {warp, affine}; }
  std::vector<SpatialTransform> subject_to_template() const;
};

// Throws std::invalid_argument for an empty template, a bad grid or non-positive sizes.
WarpPhantom make_warp_phantom(Device& device, const Image& template_image, const WarpPhantomSpec& spec);

// An affine of a rotation (radians, about the axis), per-axis scales and a translation (mm) about `centre`.
Eigen::Matrix4d affine_about(const Eigen::Vector3d& centre, double angle_rad, const Eigen::Vector3d& axis,
                             const Eigen::Vector3d& scales, const Eigen::Vector3d& translation_mm);

// The standard case of the tests and the benchmark: an affine of 7 degrees, scales (1.08, 0.95, 1.04) and (6, -9, 4)
// mm about the template's centre; the subject's grid is the template's moved with the brain, stored left-right
// flipped, with 10% larger voxels and tilted 8 degrees (oblique to the template, its own voxel size).
WarpPhantomSpec standard_warp_phantom(const ImageHeader& template_grid, double max_displacement_mm, uint64_t seed = 1);

// |a(x) - b(x)| (mm) for the world points x of the template's voxels > 0, every `step`-th voxel per axis: how far
// two template -> subject chains disagree in the brain.
std::vector<double> disagreement_in_brain(const Image& template_image, const std::vector<SpatialTransform>& a,
                                          const std::vector<SpatialTransform>& b, int step = 1);

// The mean and the smallest Dice overlap of two label images on one grid, over the labels with at least 10 voxels in
// `truth`.
std::pair<double, double> label_dice(const Image& truth, const Image& estimate);

}  // namespace rtf::sim
