// Coarse-to-fine Gauss-Newton for rigid registration (inverse compositional, Baker & Matthews 2004), independent of
// where the sums come from: the device (RigidRegistration) or the double-precision reference. Each level samples the
// reference every `stride` voxels of images smoothed by `smoothing_fwhm_mm`. docs/algorithms/motion_correction.md.
#pragma once

#include <Eigen/Core>
#include <functional>
#include <string>
#include <vector>

#include "core/geometry/rigid_transform.hpp"
#include "core/registration/normal_equations.hpp"

namespace rtf {

// How the moving image is sampled at the transformed positions. Trilinear interpolation biases rigid estimates by a
// few hundredths of a degree on 3 mm data (its error varies with the sub-voxel position); Keys cubic convolution
// (a = -0.5) removes most of that at 8x the memory reads (measured: docs/algorithms/motion_correction.md).
enum class Interpolation { kTrilinear, kCubic };

struct RegistrationLevel {
  int stride = 1;                  // sample every stride-th reference voxel per axis
  double smoothing_fwhm_mm = 0.0;  // Gaussian smoothing of reference and moving images at this level (0: none)
  Interpolation interpolation = Interpolation::kCubic;
};

struct RegistrationOptions {
  // One level by default: at FWHM 6 mm the fit converges from jumps of up to 15 mm and 15 degrees per axis on the
  // phantom, so a coarse level ({2, 8.0, kTrilinear} first) adds time, not robustness (measured:
  // docs/algorithms/motion_correction.md).
  std::vector<RegistrationLevel> levels{{1, 6.0, Interpolation::kCubic}};
  int max_iterations = 30;      // per level
  double tolerance_mm = 1e-3;   // converged when an update moves no point within radius_mm by more than this
  bool intensity_model = true;  // also fit a linear intensity scaling field (robust to shading)
  double radius_mm = 50.0;      // sphere for the tolerance and for the intensity field's scale
  int64_t min_voxels = 500;     // fewer usable voxels than this: registration fails
  // Reference voxels closer than this to a face of the grid are not sampled (>= 1: the gradient needs neighbours).
  // Near the faces, smoothing sees different content beyond the field of view in each volume, which biases the fit
  // when the head fills the field of view (measured: docs/algorithms/motion_correction.md).
  int64_t edge_margin_voxels = 1;
};

struct RegistrationResult {
  Eigen::Matrix4d transform = Eigen::Matrix4d::Identity();  // world -> world: moving(transform * x) ~ reference(x)
  RigidParams params;                                       // of transform, about the centre
  Eigen::Vector4d intensity = Eigen::Vector4d::Zero();      // linear intensity field (scale - 1, gradient)
  int iterations = 0;                                       // over all levels
  bool converged = false;                                   // the final level met the tolerance
  double rms_residual = 0.0;                                // at the last iteration
  int64_t voxels = 0;                                       // sampled voxels at the last iteration
  int64_t non_finite_voxels = 0;  // NaN or infinite voxels of the moving volume (zeroed for the fit)
  std::string failure;            // why it failed (too few voxels, singular system, not converged); empty on success
};

// Sums of one iteration at `level` for the current transform and intensity parameters.
using SumsProvider =
    std::function<NormalEquations(int level, const Eigen::Matrix4d& transform, const Eigen::Vector4d& intensity)>;

RegistrationResult gauss_newton_register(const SumsProvider& sums, const RegistrationOptions& options,
                                         const Eigen::Matrix4d& initial, const Eigen::Vector3d& centre_mm);

}  // namespace rtf
