// The non-linear registration's driver: level images, the velocity field carried from level to level, the iteration.
#include "core/registration/nonlinear_registration.hpp"

#include <fmt/format.h>

#include <Eigen/LU>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "core/device/buffer.hpp"
#include "core/filters/device_reduce.hpp"
#include "core/filters/gaussian_smoothing.hpp"
#include "core/registration/deformation_ops.hpp"
#include "core/registration/resample.hpp"

namespace rtf {

namespace {

constexpr float kVarianceEps = 1e-5f;  // local variances of images scaled to [0, 1] below this carry no force

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void check_image(const Image& image, const char* what) {
  if (image.nt() != 1) {
    throw std::invalid_argument(fmt::format("non-linear registration: the {} image must be 3D, it has {} volumes",
                                            what, image.nt()));
  }
  for (int64_t d : image.header().dims) {
    if (d < 4) throw std::invalid_argument(fmt::format("non-linear registration: the {} image has an axis of {} voxels", what, d));
  }
  inverse_affine(image.header().affine, fmt::format("non-linear registration: the {} image", what));
}

void check_options(const NonlinearOptions& o) {
  if (o.levels.empty()) throw std::invalid_argument("non-linear registration: no levels");
  for (const NonlinearLevel& l : o.levels) {
    if (!(l.spacing_mm > 0.0) || l.iterations < 0) {
      throw std::invalid_argument("non-linear registration: a level needs spacing > 0 and iterations >= 0");
    }
  }
  if (!(o.window_fwhm_voxels > 0.0) || !(o.fluid_fwhm_voxels >= 0.0) || !(o.diffusion_fwhm_voxels >= 0.0) ||
      !(o.step_voxels > 0.0) || !(o.demons_alpha > 0.0) || o.convergence_window < 1) {
    throw std::invalid_argument("non-linear registration: window, step and alpha must be > 0, smoothing >= 0");
  }
}

// Non-finite voxels become 0.
Image finite_copy(const Image& image) {
  Image out = image;
  for (float& v : out.data()) {
    if (!std::isfinite(v)) v = 0.0f;
  }
  return out;
}

Image smoothed(Device& device, const Image& image, double fwhm_mm) {
  if (!(fwhm_mm > 0.0)) return image;
  SmoothingSpec spec;
  spec.fwhm_mm = fwhm_mm;
  GaussianSmoother smoother(device, image.header().dims, image.header().voxel_mm, spec);
  return smoother.smooth(image);
}

float largest(const std::vector<float>& v) {
  float m = 0.0f;
  for (float x : v) m = std::max(m, x);
  return m;
}

// The level's two images on its grid, scaled to [0, 1] by their maxima (the demons force also matches the moving
// intensities to the fixed ones by least squares first).
struct LevelImages {
  ImageHeader grid;
  std::vector<float> fixed, moving;
};

LevelImages level_images(Device& device, const Image& fixed, const Image& moving, const Eigen::Matrix4d& affine,
                         const NonlinearLevel& level, NonlinearForce force) {
  const double smallest = *std::min_element(fixed.header().voxel_mm.begin(), fixed.header().voxel_mm.end());
  const int factor = std::max(1, static_cast<int>(std::lround(level.spacing_mm / smallest)));
  const double fwhm = level.image_fwhm_mm >= 0.0 ? level.image_fwhm_mm : (factor > 1 ? level.spacing_mm : 0.0);
  LevelImages out;
  out.grid = merged_grid(fixed.header(), factor);
  out.fixed = resample(device, smoothed(device, fixed, fwhm), out.grid, {}, ResampleInterpolation::kLinear).data();
  out.moving =
      resample(device, smoothed(device, moving, fwhm), out.grid, {affine}, ResampleInterpolation::kLinear).data();
  if (force == NonlinearForce::kDemons) {
    // Least-squares s, o in F ~ s M + o over the voxels where either image is nonzero.
    double n = 0, sm = 0, sf = 0, smm = 0, smf = 0;
    for (size_t i = 0; i < out.fixed.size(); ++i) {
      const double f = out.fixed[i], m = out.moving[i];
      if (f == 0.0 && m == 0.0) continue;
      n += 1;
      sm += m;
      sf += f;
      smm += m * m;
      smf += m * f;
    }
    const double var = smm - sm * sm / std::max(n, 1.0);
    const double s = var > 0 ? (smf - sm * sf / std::max(n, 1.0)) / var : 1.0;
    const double o = n > 0 ? (sf - s * sm) / n : 0.0;
    for (float& m : out.moving) {
      if (m != 0.0f) m = static_cast<float>(s * m + o);
    }
    const float scale = largest(out.fixed);
    if (!(scale > 0.0f)) throw std::invalid_argument("non-linear registration: the fixed image is empty at a level");
    for (float& v : out.fixed) v /= scale;
    for (float& v : out.moving) v /= scale;
    return out;
  }
  const float fs = largest(out.fixed), ms = largest(out.moving);
  if (!(fs > 0.0f) || !(ms > 0.0f)) {
    throw std::invalid_argument("non-linear registration: an image is empty (no positive voxel) where they overlap");
  }
  for (float& v : out.fixed) v /= fs;
  for (float& v : out.moving) v /= ms;
  return out;
}

// The velocity of the previous level carried onto `grid` (trilinear in world space) and into its voxel units.
std::vector<float> carried_velocity(Device& device, const ImageHeader& from, const std::vector<float>& velocity,
                                    const ImageHeader& grid) {
  ImageHeader h = from;
  h.num_volumes = 3;
  const Image coarse(h, velocity);
  Image fine = resample(device, coarse, grid, {}, ResampleInterpolation::kLinear);
  const Eigen::Matrix3d to_fine = grid.affine.topLeftCorner<3, 3>().inverse() * from.affine.topLeftCorner<3, 3>();
  const size_t n = static_cast<size_t>(grid.voxels_per_volume());
  std::vector<float>& v = fine.data();
  for (size_t i = 0; i < n; ++i) {
    const Eigen::Vector3d w = to_fine * Eigen::Vector3d(v[i], v[n + i], v[2 * n + i]);
    for (size_t c = 0; c < 3; ++c) v[c * n + i] = static_cast<float>(w[static_cast<int>(c)]);
  }
  return std::move(fine.data());
}

GaussianSmoother field_smoother(Device& device, const std::array<int64_t, 3>& dims, double fwhm_voxels, int batch) {
  SmoothingSpec spec;
  spec.fwhm_mm = fwhm_voxels;  // on a grid of unit voxels: the FWHM in voxels
  return GaussianSmoother(device, dims, {1.0, 1.0, 1.0}, spec, std::nullopt, batch);
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

NonlinearResult nonlinear_register(Device& device, const Image& fixed_in, const Image& moving_in,
                                   const Eigen::Matrix4d& affine, const NonlinearOptions& options,
                                   const NonlinearProgress& progress) {
  check_options(options);
  check_image(fixed_in, "fixed");
  check_image(moving_in, "moving");
  inverse_affine(affine, "non-linear registration: the affine");
  const Image fixed = finite_copy(fixed_in);
  const Image moving = finite_copy(moving_in);
  cl_command_queue q = device.queue();
  NonlinearResult result;
  std::vector<float> velocity;
  ImageHeader previous;
  const bool lncc = options.force == NonlinearForce::kLncc;
  for (size_t li = 0; li < options.levels.size(); ++li) {
    const auto start = std::chrono::steady_clock::now();
    const NonlinearLevel& level = options.levels[li];
    const LevelImages images = level_images(device, fixed, moving, affine, level, options.force);
    const auto& dims = images.grid.dims;
    const auto n = static_cast<size_t>(images.grid.voxels_per_volume());
    velocity = li == 0 ? std::vector<float>(3 * n, 0.0f) : carried_velocity(device, previous, velocity, images.grid);
    previous = images.grid;

    DeformationOps ops(device, dims);
    GaussianSmoother window = field_smoother(device, dims, options.window_fwhm_voxels, 3);
    GaussianSmoother fluid = field_smoother(device, dims, options.fluid_fwhm_voxels, 3);
    GaussianSmoother diffusion = field_smoother(device, dims, options.diffusion_fwhm_voxels, 3);
    DeviceSum sum(device);
    DeviceBuffer<float> f(device, n), m(device, n);
    f.write(q, images.fixed);
    m.write(q, images.moving);
    DeviceBuffer<float> v(device, 3 * n), u(device, 3 * n), scratch(device, 3 * n), moments(device, 3 * n),
        local(device, 3 * n), force(device, 3 * n), update(device, 3 * n), cc(device, n);
    v.write(q, velocity);
    // The fixed image's local statistics, once per level; the voxels where they allow a correlation.
    DeviceBuffer<float> fixed_local(device, 2 * n);
    double valid = static_cast<double>(n);
    if (lncc) {
      DeviceBuffer<float> fixed_moments(device, 2 * n);
      ops.fixed_moments(f, fixed_moments);
      window.enqueue(fixed_moments, fixed_local, 2);
      const std::vector<float> stats = fixed_local.read_all(q);
      valid = 0;
      for (size_t i = 0; i < n; ++i) valid += stats[n + i] - stats[i] * stats[i] > kVarianceEps ? 1.0 : 0.0;
      if (valid < 1) throw std::invalid_argument("non-linear registration: the fixed image has no structure");
    }

    NonlinearLevelReport report;
    report.level = level;
    report.dims = dims;
    std::vector<double> history;
    double max_velocity = ops.max_norm(v);
    for (int it = 0; it <= level.iterations; ++it) {
      ops.exponential(v, u, scratch, DeformationOps::squarings_for(max_velocity));
      ops.warp_moments(m, f, u, moments);
      double similarity = 0.0;
      if (lncc) {
        window.enqueue(moments, local, 3);
        ops.lncc_force(f, moments, local, fixed_local, kVarianceEps, force, cc);
        similarity = sum.sum(cc, n) / valid;
      } else {
        ops.demons_force(f, moments, static_cast<float>(options.demons_alpha), force, cc);
        similarity = -sum.sum(cc, n) / valid;
      }
      if (!std::isfinite(similarity)) throw std::runtime_error("non-linear registration: the similarity is not finite");
      history.push_back(similarity);
      if (it == 0) report.similarity_start = similarity;
      report.similarity_end = similarity;
      const auto w = static_cast<size_t>(options.convergence_window);
      const bool converged =
          history.size() > w && history.back() - history[history.size() - 1 - w] < options.convergence_tolerance;
      if (it == level.iterations || converged) break;  // the last evaluation measures the final field
      fluid.enqueue(force, update, 3);
      const double largest_update = ops.max_norm(update);
      if (!(largest_update > 0.0)) break;
      ops.add_scaled(v, update, static_cast<float>(options.step_voxels / largest_update));
      if (options.diffusion_fwhm_voxels > 0.0) {
        diffusion.enqueue(v, scratch, 3);
        std::swap(v, scratch);
      }
      max_velocity = ops.max_norm(v);
      report.iterations = it + 1;
      report.max_velocity_voxels = max_velocity;
      report.seconds = seconds_since(start);
      if (progress) progress(report, static_cast<int>(li));
    }
    velocity = v.read_all(q);
    report.max_velocity_voxels = max_velocity;
    report.seconds = seconds_since(start);
    report.finished = true;
    if (progress) progress(report, static_cast<int>(li));
    result.levels.push_back(report);
  }
  result.grid = previous;
  result.velocity = std::move(velocity);
  return result;
}

}  // namespace rtf
