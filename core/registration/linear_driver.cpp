// Levenberg-Marquardt over the levels of linear registration (linear_register), and the centre-of-mass start.
#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <Eigen/Geometry>
#include <chrono>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "core/registration/linear_registration.hpp"

namespace rtf {

namespace {

constexpr double kInitialDamping = 1e-3;
constexpr double kMinDamping = 1e-7;
constexpr double kMaxDamping = 1e6;

double mean_square(const LinearSums& s) {
  return s.count > 0 ? s.sum_squared_residual / static_cast<double>(s.count) : 0.0;
}

}  // namespace

std::vector<LinearLevel> parse_linear_levels(const std::string& text) {
  std::vector<LinearLevel> levels;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    LinearLevel level;
    char colon = 0;
    std::stringstream field(item);
    if (!(field >> level.spacing_mm >> colon >> level.fwhm_mm) || colon != ':' || !field.eof() ||
        !(level.spacing_mm > 0) || !(level.fwhm_mm >= 0)) {
      throw std::invalid_argument(
          fmt::format("levels: expected SPACING_MM:FWHM_MM[,...] with spacing > 0, e.g. 8:8,4:4,2:2; got '{}'", item));
    }
    levels.push_back(level);
  }
  if (levels.empty()) throw std::invalid_argument("levels: no level given");
  return levels;
}

AffineParameterisation start_parameterisation(const LinearRegistrationOptions& options, const Eigen::Matrix4d& initial,
                                              const Eigen::Vector3d& fixed_centre) {
  check_dof(options.dof);
  AffineParameterisation param;
  param.dof = options.dof;
  param.start = initial;
  param.centre = (initial * fixed_centre.homogeneous()).head<3>();
  return param;
}

LinearRegistrationResult linear_register(const LinearSumsProvider& sums, const LinearRegistrationOptions& options,
                                         const Eigen::Matrix4d& initial, const Eigen::Vector3d& fixed_centre,
                                         const std::vector<int>& strides, const LinearProgress& progress) {
  const AffineParameterisation param = start_parameterisation(options, initial, fixed_centre);
  const int k = options.dof;
  Eigen::VectorXd p = Eigen::VectorXd::Zero(k);
  LinearRegistrationResult result;
  result.transform = initial;
  result.params = p;
  double scale = 1.0, offset = 0.0;
  for (int level = 0; level < static_cast<int>(options.levels.size()); ++level) {
    const auto start = std::chrono::steady_clock::now();
    LinearLevelReport report;
    report.level = options.levels[static_cast<size_t>(level)];
    report.stride = level < static_cast<int>(strides.size()) ? strides[static_cast<size_t>(level)] : 1;
    Eigen::Matrix4d t = param.matrix(p);
    // The intensity model restarts from its closed-form optimum at each level (the smoothing changes the contrast).
    std::tie(scale, offset) = sums(level, t, 1.0, 0.0).best_intensity();
    LinearSums current = sums(level, t, scale, offset);
    if (level == 0) result.initial_ncc = current.ncc();
    double damping = kInitialDamping;
    bool converged = false;
    for (int it = 0; it < options.max_iterations && !converged;) {
      if (current.count < options.min_points) {
        result.failure = fmt::format("only {} sample points overlap the moving image at level {} (need {})",
                                     current.count, level + 1, options.min_points);
        return result;
      }
      Eigen::MatrixXd j = Eigen::MatrixXd::Zero(kLinearSumParams, k + 2);
      j.topLeftCorner(12, k) = param.jacobian(p, fixed_centre);
      j(12, k) = 1.0;
      j(13, k + 1) = 1.0;
      const Eigen::MatrixXd h = j.transpose() * current.h * j;
      const Eigen::VectorXd g = j.transpose() * current.b;
      Eigen::MatrixXd a = h;
      for (int i = 0; i < k + 2; ++i) a(i, i) += damping * std::max(h(i, i), 1e-12);
      const Eigen::LDLT<Eigen::MatrixXd> solver(a);
      const Eigen::VectorXd delta = solver.solve(-g);
      if (solver.info() != Eigen::Success || !delta.allFinite()) {
        result.failure = fmt::format("singular system at level {}", level + 1);
        return result;
      }
      const Eigen::VectorXd p_new = p + delta.head(k);
      const Eigen::Matrix4d t_new = param.matrix(p_new);
      const double scale_new = scale + delta[k], offset_new = offset + delta[k + 1];
      LinearSums next = sums(level, t_new, scale_new, offset_new);
      if (next.count >= options.min_points && mean_square(next) < mean_square(current)) {
        const double moved = max_corner_displacement(t, t_new, param.centre, options.radius_mm);
        p = p_new;
        t = t_new;
        scale = scale_new;
        offset = offset_new;
        current = std::move(next);
        damping = std::max(damping * 0.1, kMinDamping);
        ++it;
        ++report.iterations;
        converged = moved < options.tolerance_mm;
        report.points = current.count;
        report.ncc = current.ncc();
        report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (progress) progress(report, level);
      } else {
        damping *= 10.0;
        converged = damping > kMaxDamping;  // no step along the gradient lowers the cost: a minimum
      }
    }
    report.points = current.count;
    report.ncc = current.ncc();
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.finished = true;
    if (progress) progress(report, level);
    result.levels.push_back(report);
    result.iterations += report.iterations;
    result.converged = converged;
    result.ncc = report.ncc;
    result.transform = t;
    result.params = p;
    result.intensity_scale = scale;
    result.intensity_offset = offset;
  }
  return result;
}

Eigen::Matrix4d centre_of_mass_alignment(const Image& fixed, const Image& moving) {
  auto centre = [](const Image& image) -> std::optional<Eigen::Vector3d> {
    Eigen::Vector3d sum = Eigen::Vector3d::Zero();
    double mass = 0.0;
    for (int64_t z = 0; z < image.nz(); ++z) {
      for (int64_t y = 0; y < image.ny(); ++y) {
        for (int64_t x = 0; x < image.nx(); ++x) {
          const double v = image.at(x, y, z);
          if (!(v > 0.0) || !std::isfinite(v)) continue;
          sum += v * Eigen::Vector3d(static_cast<double>(x), static_cast<double>(y), static_cast<double>(z));
          mass += v;
        }
      }
    }
    if (!(mass > 0.0)) return std::nullopt;
    return (image.header().affine * (sum / mass).homogeneous()).head<3>();
  };
  const auto f = centre(fixed), m = centre(moving);
  Eigen::Matrix4d t = Eigen::Matrix4d::Identity();
  if (f && m) t.topRightCorner<3, 1>() = *m - *f;
  return t;
}

Eigen::Matrix4d centre_of_mass_alignment(const DeviceVolume& fixed, const DeviceVolume& moving) {
  Eigen::Matrix4d t = Eigen::Matrix4d::Identity();
  if (fixed.centre_of_mass && moving.centre_of_mass) {
    t.topRightCorner<3, 1>() = *moving.centre_of_mass - *fixed.centre_of_mass;
  }
  return t;
}

}  // namespace rtf
