// Normalisation of a subject's T1 to a template on the device: a 12-dof affine registration (NCC, coarse to fine),
// then the non-linear registration (core/registration/nonlinear_registration.hpp) refining it. The result is a chain
// of ITK-convention transforms: a template point x goes to x + u(x) (the warp, a displacement field on the template's
// grid, RAS mm), then through the affine to the subject. The inverse warp exp(-v) is computed from the same velocity
// field, checked (|inverse(warp(x)) - x| over the template's brain) and reported with the warp's Jacobian
// determinant on the template's grid. docs/algorithms/normalization.md.
#pragma once

#include <Eigen/Core>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/device/device.hpp"
#include "core/image/image.hpp"
#include "core/registration/displacement_field.hpp"
#include "core/registration/linear_registration.hpp"
#include "core/registration/nonlinear_registration.hpp"

namespace rtf {

struct NormalizationOptions {
  LinearRegistrationOptions affine{.dof = 12, .cost = LinearCost::kNcc};
  bool nonlinear = true;  // false: affine only
  NonlinearOptions warp;
  // Squarings of the final exponentials (a fine step keeps the warp and its inverse accurate): at least this many,
  // more when the field is large.
  int final_squarings = 6;
  bool jacobian_image = false;  // also return the Jacobian determinant per template voxel (its summary always comes)
};

struct JacobianSummary {
  double min = 1.0, max = 1.0;
  int64_t folded = 0;          // voxels with det <= 0 (over the whole grid)
  int64_t folded_in_mask = 0;  // within the template's brain (voxels > 0)
  int64_t voxels = 0;
};

struct NormalizationResult {
  Eigen::Matrix4d affine = Eigen::Matrix4d::Identity();  // template world -> subject world (RAS mm)
  LinearRegistrationResult affine_report;
  // Three volumes (RAS mm) on the finest non-linear level's grid (the template's grid with its voxels merged to that
  // level's spacing, or the template's own); null when the non-linear step is off.
  std::shared_ptr<const Image> warp, inverse_warp;
  // det of x -> x + u(x) on the template's grid (with NormalizationOptions::jacobian_image and a warp; else null).
  std::shared_ptr<const Image> jacobian;
  NonlinearResult nonlinear_report;  // velocity field and per-level reports
  JacobianSummary jacobian_summary;
  double inverse_error_max_mm = 0.0, inverse_error_mean_mm = 0.0;  // |inverse(warp(x)) - x| in the brain
  double seconds = 0.0;
  // Where the time went: the images' upload (and their checks on the device), the affine (set-up and levels), the
  // non-linear levels (uploads included), the final warp and inverse with their checks on the device, and reading the
  // fields and the Jacobian back to the host.
  struct Timing {
    double upload = 0.0, affine = 0.0, nonlinear = 0.0, final_fields = 0.0, read_back = 0.0;
  } timing;

  // Points: template -> subject (pull a subject image onto the template: apply -t warp -t affine).
  std::vector<SpatialTransform> template_to_subject() const;
  // Points: subject -> template (pull a template-space atlas onto the subject: -t [affine,1] -t inverse_warp).
  std::vector<SpatialTransform> subject_to_template() const;
};

// Reports for the affine levels (`affine_level` >= 0, `nonlinear` null) and the non-linear ones.
struct NormalizationProgress {
  std::function<void(const LinearLevelReport& report, int level)> affine;
  NonlinearProgress nonlinear;
};

// `subject` and `template_image`: 3D (any grids and orientations). `initial`: the affine's start (default: align the
// intensity centres of mass). Throws std::invalid_argument for bad input and std::runtime_error when the affine
// registration fails (its reason).
NormalizationResult normalize(Device& device, const Image& subject, const Image& template_image,
                              const NormalizationOptions& options = {},
                              const std::optional<Eigen::Matrix4d>& initial = std::nullopt,
                              const NormalizationProgress& progress = {});

// The NCC of `a` and `b` (same grid) over the voxels where `mask` is nonzero (all voxels without a mask).
double masked_ncc(std::span<const float> a, std::span<const float> b, std::span<const float> mask = {});

}  // namespace rtf
