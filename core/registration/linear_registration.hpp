// Linear registration of a moving image to a fixed image on another grid, on the device, coarse to fine, with 6, 9 or
// 12 degrees of freedom, with the NCC or the mutual-information cost (docs/algorithms/registration.md). Each level
// smooths both images and samples the fixed grid every `stride` voxels. NCC: Levenberg-Marquardt on the
// intensity-scaled least squares of kernels/linear_register.cl (its optimum is the NCC optimum). MI: BFGS on Mattes'
// mutual information (kernels/mutual_information.cl). The device computes the sums, the host solves the small system.
// The result maps fixed world points to moving world points (RAS mm), as ITK transforms do.
#pragma once

#include <Eigen/Core>
#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/device/device.hpp"
#include "core/image/image.hpp"
#include "core/registration/affine_params.hpp"
#include "core/registration/device_volume.hpp"
#include "core/registration/linear_sums.hpp"
#include "core/registration/mutual_information.hpp"

namespace rtf {

struct LinearLevel {
  double spacing_mm = 4.0;  // distance between sampled fixed voxels (the stride is spacing / smallest voxel size)
  double fwhm_mm = 4.0;     // Gaussian smoothing of both images at this level (0: none)
};

// ncc: intensity-scaled least squares, whose optimum maximises the normalised cross-correlation (same modality);
// mi: Mattes mutual information (any monotonic or non-monotonic intensity relation, e.g. EPI to T1);
// lncc: the mean local (Gaussian-window) correlation over a lattice of sample points (intensity relations that are
// linear within a window, of either sign).
enum class LinearCost { kNcc, kMi, kLncc };

struct LinearRegistrationOptions {
  int dof = 12;
  LinearCost cost = LinearCost::kNcc;
  std::vector<LinearLevel> levels{{8.0, 8.0}, {4.0, 4.0}, {2.0, 2.0}};
  int max_iterations = 40;     // per level
  double tolerance_mm = 0.01;  // converged when an accepted step moves no point within radius_mm by more than this
  double radius_mm = 60.0;
  int64_t min_points = 500;         // fewer overlapping sample points than this: registration fails
  double lncc_window_voxels = 4.0;  // lncc: the window's FWHM in sample-lattice steps (the level's spacing)
};

struct LinearLevelReport {
  LinearLevel level;
  int stride = 1;
  int64_t points = 0;  // overlapping sample points at the end of the level
  int iterations = 0;  // accepted steps
  double ncc = 0.0;    // at the end of the level (NCC cost)
  double mi = 0.0;     // at the end of the level (MI cost, nats)
  double lncc = 0.0;   // at the end of the level (LNCC cost: mean local cc)
  double seconds = 0.0;
  bool finished = false;  // the level's last report
};

struct LinearRegistrationResult {
  Eigen::Matrix4d transform = Eigen::Matrix4d::Identity();  // fixed world -> moving world (RAS mm)
  Eigen::VectorXd params;                                   // of AffineParameterisation, relative to the start
  double ncc = 0.0;                                         // at the finest level (NCC cost)
  double initial_ncc = 0.0;                                 // at the start, at the coarsest level (NCC cost)
  double mi = 0.0, initial_mi = 0.0;                        // the same for the MI cost (nats)
  double lncc = 0.0, initial_lncc = 0.0;                    // and for the LNCC cost
  double intensity_scale = 1.0, intensity_offset = 0.0;     // moving -> fixed intensities at the end
  int iterations = 0;                                       // over all levels
  bool converged = false;                                   // the finest level met the tolerance
  std::vector<LinearLevelReport> levels;
  std::string failure;  // why it failed (too little overlap, singular system); empty on success
};

// Levels from "SPACING:FWHM,SPACING:FWHM,..." (mm), e.g. "8:8,4:4,2:2". Throws std::invalid_argument naming the bad
// item (spacing must be > 0, FWHM >= 0).
std::vector<LinearLevel> parse_linear_levels(const std::string& text);

// The parameterisation the drivers refine: `dof` parameters about the point where `initial` puts the fixed centre.
AffineParameterisation start_parameterisation(const LinearRegistrationOptions& options, const Eigen::Matrix4d& initial,
                                              const Eigen::Vector3d& fixed_centre);

// Sums of one iteration at `level` for the fixed -> moving `transform` and intensity scale and offset.
using LinearSumsProvider =
    std::function<LinearSums(int level, const Eigen::Matrix4d& transform, double scale, double offset)>;
// Called after every accepted step and at the end of each level (report.finished).
using LinearProgress = std::function<void(const LinearLevelReport& current, int level_index)>;

// MI and (when asked) its gradient at `level` for the fixed -> moving `transform`.
using MiProvider = std::function<MiEvaluation(int level, const Eigen::Matrix4d& transform, bool gradient)>;

// The quasi-Newton (BFGS with a backtracking line search) driver of the MI cost, independent of where MI comes from.
LinearRegistrationResult linear_register_mi(const MiProvider& mi, const LinearRegistrationOptions& options,
                                            const Eigen::Matrix4d& initial, const Eigen::Vector3d& fixed_centre,
                                            const std::vector<int>& strides, const LinearProgress& progress = {});

// The Levenberg-Marquardt driver, independent of where the sums come from. `fixed_centre`: the centre c of the sums'
// Jacobian (X - c); `strides` and `points_per_level` only fill the reports.
LinearRegistrationResult linear_register(const LinearSumsProvider& sums, const LinearRegistrationOptions& options,
                                         const Eigen::Matrix4d& initial, const Eigen::Vector3d& fixed_centre,
                                         const std::vector<int>& strides, const LinearProgress& progress = {});

// The translation that moves the fixed image's intensity centre of mass onto the moving image's (negative and
// non-finite voxels count as 0): a starting point for images that are far apart. Identity when either is empty.
Eigen::Matrix4d centre_of_mass_alignment(const Image& fixed, const Image& moving);
// The same from the centres computed on the device (DeviceVolume::centre_of_mass).
Eigen::Matrix4d centre_of_mass_alignment(const DeviceVolume& fixed, const DeviceVolume& moving);

class LinearRegistration {
 public:
  // `fixed` and `moving`: 3D images (any grids, orientations and voxel sizes). `fixed_mask` (fixed voxels, nonzero =
  // use) restricts the sample points. Throws std::invalid_argument for a 4D image, a non-invertible affine, an axis
  // shorter than 4 voxels, an empty mask, more than 10% non-finite voxels, a constant image, or bad options.
  LinearRegistration(Device& device, const Image& fixed, const Image& moving, LinearRegistrationOptions options = {},
                     std::optional<std::span<const uint8_t>> fixed_mask = std::nullopt);
  // The same for images already on the device (shared with other registrations of the same pair, e.g. by
  // normalize()): no upload, the checks on their device statistics.
  LinearRegistration(Device& device, std::shared_ptr<const DeviceVolume> fixed,
                     std::shared_ptr<const DeviceVolume> moving, LinearRegistrationOptions options = {},
                     std::optional<std::span<const uint8_t>> fixed_mask = std::nullopt);
  ~LinearRegistration();
  LinearRegistration(const LinearRegistration&) = delete;
  LinearRegistration& operator=(const LinearRegistration&) = delete;

  // Registers from `initial` (fixed world -> moving world).
  LinearRegistrationResult run(const Eigen::Matrix4d& initial, const LinearProgress& progress = {});

  // Device sums at `level` (prepares that level's images if it is not the current one). For tests.
  LinearSums sums(int level, const Eigen::Matrix4d& transform, double scale, double offset);
  // Device MI (and its gradient) at `level`; the joint histogram goes to `histogram` when given. For tests.
  MiEvaluation mutual_information(int level, const Eigen::Matrix4d& transform, bool gradient,
                                  std::vector<double>* histogram = nullptr);
  // Device LNCC (mean local cc in `mi`) and its gradient at `level`. For tests.
  MiEvaluation local_correlation(int level, const Eigen::Matrix4d& transform);
  // The LNCC window's taps on the sample lattice and the variance guards (for the reference).
  std::array<std::vector<double>, 3> lncc_window_taps() const;
  std::pair<double, double> lncc_eps() const;
  // The intensity binning of the MI cost (from the two images' ranges).
  const MiBinning& mi_binning() const;

  const Eigen::Vector3d& fixed_centre() const { return fixed_centre_; }
  int stride(int level) const;

 private:
  struct State;
  void prepare_level(int level);
  std::unique_ptr<State> state_;
  Eigen::Vector3d fixed_centre_;
};

}  // namespace rtf
