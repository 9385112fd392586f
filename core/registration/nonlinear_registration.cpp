// The non-linear registration's driver: level images, the velocity field carried from level to level, the iteration.
#include "core/registration/nonlinear_registration.hpp"

#include <fmt/format.h>

#include <Eigen/LU>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "core/device/buffer.hpp"
#include "core/filters/device_reduce.hpp"
#include "core/filters/gaussian_smoothing.hpp"
#include "core/registration/deformation_ops.hpp"
#include "core/registration/device_volume.hpp"
#include "core/registration/resample.hpp"

namespace rtf {

namespace {

// Local variances below this share of the image's largest squared intensity carry no force.
constexpr double kRelativeVarianceEps = 1e-5;
// The host reads the similarity (and the velocity's size) every this many iterations.
constexpr int kEvaluateEvery = 4;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void check_image(const Image& image, const char* what) {
  if (image.nt() != 1) {
    throw std::invalid_argument(
        fmt::format("non-linear registration: the {} image must be 3D, it has {} volumes", what, image.nt()));
  }
  for (int64_t d : image.header().dims) {
    if (d < 4) {
      throw std::invalid_argument(
          fmt::format("non-linear registration: the {} image has an axis of {} voxels", what, d));
    }
  }
  inverse_affine(image.header().affine, fmt::format("non-linear registration: the {} image", what));
}

}  // namespace

void check_nonlinear_options(const NonlinearOptions& o) {
  if (o.levels.empty()) throw std::invalid_argument("non-linear registration: no levels");
  for (const NonlinearLevel& l : o.levels) {
    if (!(l.spacing_mm > 0.0) || l.iterations < 0) {
      throw std::invalid_argument("non-linear registration: a level needs spacing > 0 and iterations >= 0");
    }
  }
  if (!(o.window_fwhm_voxels > 0.0) || !(o.fluid_fwhm_voxels >= 0.0) || !(o.diffusion_fwhm_voxels >= 0.0) ||
      !(o.step_voxels > 0.0) || !(o.gain > 0.0) || !(o.demons_alpha > 0.0) || o.convergence_window < 1) {
    throw std::invalid_argument("non-linear registration: window, step, gain and alpha must be > 0, smoothing >= 0");
  }
}

namespace {

// `image` smoothed on its own grid (FWHM in mm; 0: as is) and resampled trilinearly into `out` on `grid`, its voxel v
// taken from the image's world point T A_grid v (T: grid world -> image world).
void level_image(Device& device, const DeviceVolume& image, double fwhm_mm, const ImageHeader& grid,
                 const Eigen::Matrix4d& t, DeviceBuffer<float>& scratch, DeviceBuffer<float>& out) {
  const DeviceBuffer<float>* source = &image.data;
  if (fwhm_mm > 0.0) {
    SmoothingSpec spec;
    spec.fwhm_mm = fwhm_mm;
    GaussianSmoother smoother(device, image.grid.dims, image.grid.voxel_mm, spec);
    smoother.enqueue(image.data, scratch, 1);
    source = &scratch;
  }
  const Eigen::Matrix4d to_voxel = image.grid.affine.inverse() * t * grid.affine;
  resample_on_device(device, *source, image.grid.dims, out, grid.dims, to_voxel, 1, ResampleInterpolation::kLinear);
}

GaussianSmoother field_smoother(Device& device, const std::array<int64_t, 3>& dims, double fwhm_voxels, int batch) {
  SmoothingSpec spec;
  spec.fwhm_mm = fwhm_voxels;  // on a grid of unit voxels: the FWHM in voxels
  return GaussianSmoother(device, dims, {1.0, 1.0, 1.0}, spec, std::nullopt, batch);
}

// Least-squares s, o in F ~ s M + o over the voxels where either level image is nonzero (the demons force's global
// intensity match), from the host copies of the coarsest level's images.
std::pair<double, double> intensity_match(const std::vector<float>& fixed, const std::vector<float>& moving) {
  double n = 0, sm = 0, sf = 0, smm = 0, smf = 0;
  for (size_t i = 0; i < fixed.size(); ++i) {
    const double f = fixed[i], m = moving[i];
    if (f == 0.0 && m == 0.0) continue;
    n += 1;
    sm += m;
    sf += f;
    smm += m * m;
    smf += m * f;
  }
  if (n < 2) return {1.0, 0.0};
  const double var = smm - sm * sm / n;
  const double s = var > 0 ? (smf - sm * sf / n) / var : 1.0;
  return {s, (sf - s * sm) / n};
}

}  // namespace

std::vector<NonlinearLevel> parse_nonlinear_levels(const std::string& text) {
  std::vector<NonlinearLevel> levels;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    NonlinearLevel level;
    char colon1 = 0, colon2 = 0;
    std::istringstream in(item);
    if (!(in >> level.spacing_mm >> colon1 >> level.iterations) || colon1 != ':') {
      throw std::invalid_argument(fmt::format("non-linear level '{}': expected SPACING:ITERATIONS[:FWHM]", item));
    }
    if (in >> colon2) {
      if (colon2 != ':' || !(in >> level.image_fwhm_mm) || level.image_fwhm_mm < 0) {
        throw std::invalid_argument(fmt::format("non-linear level '{}': FWHM must be a number >= 0", item));
      }
    }
    std::string rest;
    if (in >> rest) throw std::invalid_argument(fmt::format("non-linear level '{}': unexpected '{}'", item, rest));
    if (!(level.spacing_mm > 0.0) || level.iterations < 0) {
      throw std::invalid_argument(fmt::format("non-linear level '{}': spacing must be > 0, iterations >= 0", item));
    }
    levels.push_back(level);
  }
  if (levels.empty()) throw std::invalid_argument("non-linear levels: none given");
  return levels;
}

std::string format_nonlinear_levels(const std::vector<NonlinearLevel>& levels) {
  std::string out;
  for (const NonlinearLevel& l : levels) {
    if (!out.empty()) out += ",";
    out += fmt::format("{}:{}", l.spacing_mm, l.iterations);
    if (l.image_fwhm_mm >= 0.0) out += fmt::format(":{}", l.image_fwhm_mm);
  }
  return out;
}

ImageHeader merged_grid(const ImageHeader& fixed, int factor) {
  ImageHeader h = fixed;
  h.num_volumes = 1;
  h.tr_s = 0.0;
  if (factor <= 1) return h;
  const double f = factor;
  for (size_t a = 0; a < 3; ++a) {
    h.dims[a] = (fixed.dims[a] + factor - 1) / factor;
    h.voxel_mm[a] = fixed.voxel_mm[a] * f;
  }
  // Level voxel i covers fixed voxels f i .. f i + f - 1: its centre is fixed voxel f i + (f - 1) / 2.
  Eigen::Matrix4d scale = Eigen::Matrix4d::Identity();
  for (int a = 0; a < 3; ++a) {
    scale(a, a) = f;
    scale(a, 3) = 0.5 * (f - 1.0);
  }
  h.affine = fixed.affine * scale;
  return h;
}

NonlinearResult nonlinear_register(Device& device, const Image& fixed, const Image& moving,
                                   const Eigen::Matrix4d& affine, const NonlinearOptions& options,
                                   const NonlinearProgress& progress) {
  check_nonlinear_options(options);
  check_image(fixed, "fixed");
  check_image(moving, "moving");
  return nonlinear_register(device, *DeviceVolume::upload(device, fixed), *DeviceVolume::upload(device, moving), affine,
                            options, progress);
}

NonlinearResult nonlinear_register(Device& device, const DeviceVolume& fixed, const DeviceVolume& moving,
                                   const Eigen::Matrix4d& affine, const NonlinearOptions& options,
                                   const NonlinearProgress& progress) {
  check_nonlinear_options(options);
  inverse_affine(affine, "non-linear registration: the affine");
  inverse_affine(fixed.grid.affine, "non-linear registration: the fixed image");
  inverse_affine(moving.grid.affine, "non-linear registration: the moving image");
  if (!(fixed.hi > 0.0f)) throw std::invalid_argument("non-linear registration: the fixed image has no positive voxel");
  if (!(moving.hi > 0.0f)) {
    throw std::invalid_argument("non-linear registration: the moving image has no positive voxel");
  }
  cl_command_queue q = device.queue();
  // Every level is made on the device from the two images, uploaded once.
  DeviceBuffer<float> fixed_scratch(device, fixed.data.size()), moving_scratch(device, moving.data.size());
  const bool lncc = options.force == NonlinearForce::kLncc;
  const auto eps_fixed = static_cast<float>(kRelativeVarianceEps * fixed.hi * fixed.hi);
  const auto eps_moving = static_cast<float>(kRelativeVarianceEps * moving.hi * moving.hi);
  std::pair<double, double> match{1.0, 0.0};  // demons: moving intensities -> fixed ones
  const double smallest = *std::min_element(fixed.grid.voxel_mm.begin(), fixed.grid.voxel_mm.end());

  NonlinearResult result;
  ImageHeader previous;
  std::optional<DeviceBuffer<float>> carried;  // the previous level's velocity
  for (size_t li = 0; li < options.levels.size(); ++li) {
    const auto start = std::chrono::steady_clock::now();
    const NonlinearLevel& level = options.levels[li];
    const int factor = std::max(1, static_cast<int>(std::lround(level.spacing_mm / smallest)));
    const double fwhm = level.image_fwhm_mm >= 0.0 ? level.image_fwhm_mm : (factor > 1 ? level.spacing_mm : 0.0);
    const ImageHeader grid = merged_grid(fixed.grid, factor);
    const auto& dims = grid.dims;
    const auto n = static_cast<size_t>(grid.voxels_per_volume());

    DeformationOps ops(device, dims);
    DeviceBuffer<float> f(device, n), m(device, n);
    level_image(device, fixed, fwhm, grid, Eigen::Matrix4d::Identity(), fixed_scratch, f);
    level_image(device, moving, fwhm, grid, affine, moving_scratch, m);
    if (!lncc) {
      // Demons: intensities matched to the fixed image's (once, at the first level) and scaled to [0, 1].
      if (li == 0) match = intensity_match(f.read_all(q), m.read_all(q));
      const double scale = 1.0 / fixed.hi;
      ops.scale_intensity(f, static_cast<float>(scale), 0.0f);
      ops.scale_intensity(m, static_cast<float>(match.first * scale), static_cast<float>(match.second * scale));
    }
    DeviceBuffer<float> v(device, 3 * n), u(device, 3 * n), scratch(device, 3 * n), moments(device, 3 * n),
        local(device, 3 * n), force(device, 3 * n), update(device, 3 * n), cc(device, n);
    if (carried) {
      // The previous level's velocity on this grid, in this grid's voxel units.
      resample_on_device(device, *carried, previous.dims, v, dims, previous.affine.inverse() * grid.affine, 3,
                         ResampleInterpolation::kLinear);
      ops.transform_vectors(v, v, grid.affine.topLeftCorner<3, 3>().inverse() * previous.affine.topLeftCorner<3, 3>());
    } else {
      v.fill(q, 0.0f);
    }
    GaussianSmoother window = field_smoother(device, dims, options.window_fwhm_voxels, 3);
    GaussianSmoother fluid = field_smoother(device, dims, options.fluid_fwhm_voxels, 3);
    GaussianSmoother diffusion = field_smoother(device, dims, options.diffusion_fwhm_voxels, 3);
    DeviceSum sum(device);
    // The fixed image's local statistics, once per level, and the voxels where they allow a correlation.
    DeviceBuffer<float> fixed_local(device, 2 * n);
    double valid = static_cast<double>(n);
    if (lncc) {
      ops.fixed_moments(f, moments);
      window.enqueue(moments, fixed_local, 2);
      ops.variance_indicator(fixed_local, eps_fixed, cc);
      valid = sum.sum(cc, n);
      if (valid < 1) throw std::invalid_argument("non-linear registration: the fixed image has no structure");
    }

    NonlinearLevelReport report;
    report.level = level;
    report.dims = dims;
    report.setup_seconds = seconds_since(start);
    std::vector<double> history;
    double max_velocity = ops.max_norm(v);
    // The host waits for the device only every kEvaluateEvery iterations (the similarity for the convergence test and
    // the velocity's largest vector for the squarings); in between, the velocity grows by at most step_voxels per
    // iteration (each update is capped so, and the diffusion smoothing never raises the largest vector), a bound that
    // sets the squarings safely.
    double velocity_bound = max_velocity;
    const int window_evaluations = (options.convergence_window + kEvaluateEvery - 1) / kEvaluateEvery;
    for (int it = 0; it <= level.iterations; ++it) {
      ops.exponential(v, u, scratch, DeformationOps::squarings_for(velocity_bound));
      ops.warp_moments(m, f, u, moments);
      if (lncc) {
        window.enqueue(moments, local, 3);
        ops.lncc_force(f, moments, local, fixed_local, eps_fixed, eps_moving, force, cc);
      } else {
        ops.demons_force(f, moments, static_cast<float>(options.demons_alpha), force, cc);
      }
      if (it % kEvaluateEvery == 0 || it == level.iterations) {
        const double similarity = (lncc ? 1.0 : -1.0) * sum.sum(cc, n) / valid;
        if (!std::isfinite(similarity)) {
          throw std::runtime_error("non-linear registration: the similarity is not finite");
        }
        history.push_back(similarity);
        if (it == 0) report.similarity_start = similarity;
        report.similarity_end = similarity;
        const auto w = static_cast<size_t>(window_evaluations);
        const bool converged =
            history.size() > w && history.back() - history[history.size() - 1 - w] < options.convergence_tolerance;
        if (it == level.iterations || converged) break;  // the last evaluation measures the final field
        max_velocity = ops.max_norm(v);
        velocity_bound = max_velocity;
      }
      fluid.enqueue(force, update, 3);
      // The step: the smoothed force times a fixed gain (a gradient ascent whose steps shrink as the images come to
      // match), capped so that no vector moves by more than step_voxels in one iteration.
      ops.add_capped(v, update, static_cast<float>(options.gain), static_cast<float>(options.step_voxels));
      velocity_bound += options.step_voxels;
      if (options.diffusion_fwhm_voxels > 0.0) {
        diffusion.enqueue(v, scratch, 3);
        std::swap(v, scratch);
      }
      report.iterations = it + 1;
      report.seconds = seconds_since(start);
      if (progress) progress(report, static_cast<int>(li));
    }
    max_velocity = ops.max_norm(v);
    report.max_velocity_voxels = max_velocity;
    carried = std::move(v);
    previous = grid;
    RTF_CL_CHECK(clFinish(q));
    report.seconds = seconds_since(start);
    report.finished = true;
    if (progress) progress(report, static_cast<int>(li));
    result.levels.push_back(report);
  }
  result.grid = previous;
  result.velocity = carried->read_all(q);
  return result;
}

}  // namespace rtf
