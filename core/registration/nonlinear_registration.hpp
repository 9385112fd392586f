// Non-linear registration on the device: a stationary velocity field v on the fixed image's grid, whose exponential
// exp(v) (scaling and squaring) is the deformation, optimised coarse to fine by log-domain diffeomorphic demons
// (Vercauteren et al. 2008, 2009) with the local-correlation force of LCC-demons (Lorenzi et al. 2013) or the classic
// demons force of the squared difference. Each iteration: exp(v) -> warp the moving image -> force -> Gaussian
// "fluid" smoothing of the update -> v += step * update / max|update| -> Gaussian "diffusion" smoothing of v.
// The moving image comes in through an affine (fixed world -> moving world), so the deformation refines it:
// fixed point x -> x + u(x) -> affine -> moving. docs/algorithms/normalization.md.
#pragma once

#include <Eigen/Core>
#include <functional>
#include <string>
#include <vector>

#include "core/device/device.hpp"
#include "core/image/image.hpp"
#include "core/registration/device_volume.hpp"

namespace rtf {

// lncc: local (Gaussian-window) correlation, indifferent to local linear intensity changes (T1 to a T1 template of
// another scanner); demons: the squared difference after a global linear intensity match.
enum class NonlinearForce { kLncc, kDemons };

struct NonlinearLevel {
  double spacing_mm = 2.0;      // the level's grid: the fixed grid with round(spacing / voxel) voxels merged per axis
  int iterations = 30;          // at most
  double image_fwhm_mm = -1.0;  // smoothing of both images before resampling to the level; < 0: the spacing when
                                // voxels are merged, else 0
};

struct NonlinearOptions {
  NonlinearForce force = NonlinearForce::kLncc;
  std::vector<NonlinearLevel> levels{{8.0, 40}, {4.0, 30}, {2.0, 40}};
  double window_fwhm_voxels = 4.0;      // LNCC window (Gaussian), in level voxels
  double fluid_fwhm_voxels = 3.0;       // smoothing of each update, in level voxels
  double diffusion_fwhm_voxels = 1.5;   // smoothing of v after each update, in level voxels
  double gain = 1.0;                    // update = gain * smoothed force (LNCC: forces of matched images are ~0)
  double step_voxels = 0.25;            // the largest update per iteration, in level voxels (caps gain * force)
  double demons_alpha = 0.5;            // demons: the largest step is about 1 / (2 alpha) voxels per unit intensity
  int convergence_window = 8;           // a level ends when the similarity gained less than `convergence_tolerance`
  double convergence_tolerance = 1e-4;  // over the last `convergence_window` iterations (read every 4 iterations)
};

struct NonlinearLevelReport {
  NonlinearLevel level;
  std::array<int64_t, 3> dims{};
  int iterations = 0;
  double similarity_start = 0.0, similarity_end = 0.0;  // mean local cc (lncc) or -MSE (demons), at the level's images
  double max_velocity_voxels = 0.0;
  double setup_seconds = 0.0;  // the level's images and buffers (smoothing, resampling, uploads)
  double seconds = 0.0;        // the whole level, set-up included
  bool finished = false;       // the level's last report
};

struct NonlinearResult {
  ImageHeader grid;             // the finest level's grid (3D)
  std::vector<float> velocity;  // three volumes on `grid`, in its voxel units
  std::vector<NonlinearLevelReport> levels;
};

// "SPACING:ITERATIONS[:FWHM],..." (mm, count, mm), e.g. "6:40,3:30,1.5:15". Throws std::invalid_argument naming the
// bad item.
std::vector<NonlinearLevel> parse_nonlinear_levels(const std::string& text);
// The inverse of parse_nonlinear_levels (defaults for --help).
std::string format_nonlinear_levels(const std::vector<NonlinearLevel>& levels);

// The grid of a level: `fixed` with `factor` voxels merged per axis (same world extent, voxel centres at the merged
// blocks' centres). factor 1 returns `fixed` itself (3D).
ImageHeader merged_grid(const ImageHeader& fixed, int factor);

// Throws std::invalid_argument for options that cannot run (no levels, non-positive sizes).
void check_nonlinear_options(const NonlinearOptions& options);

using NonlinearProgress = std::function<void(const NonlinearLevelReport& report, int level_index)>;

// Registers `moving` (any grid, seen through `affine`: fixed world -> moving world) to `fixed`. Throws
// std::invalid_argument for 4D images, non-finite or constant images, bad options; the images' non-finite voxels
// count as 0.
NonlinearResult nonlinear_register(Device& device, const Image& fixed, const Image& moving,
                                   const Eigen::Matrix4d& affine, const NonlinearOptions& options = {},
                                   const NonlinearProgress& progress = {});
// The same for images already on the device (normalize() shares them with the affine registration).
NonlinearResult nonlinear_register(Device& device, const DeviceVolume& fixed, const DeviceVolume& moving,
                                   const Eigen::Matrix4d& affine, const NonlinearOptions& options = {},
                                   const NonlinearProgress& progress = {});

}  // namespace rtf
