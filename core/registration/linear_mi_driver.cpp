// BFGS over the levels of linear registration with the mutual-information cost (linear_register_mi).
#include <fmt/format.h>

#include <Eigen/Geometry>
#include <chrono>
#include <cmath>

#include "core/registration/linear_registration.hpp"

namespace rtf {

namespace {

constexpr double kArmijo = 1e-4;
constexpr int kMaxHalvings = 10;

}  // namespace

LinearRegistrationResult linear_register_mi(const MiProvider& mi, const LinearRegistrationOptions& options,
                                            const Eigen::Matrix4d& initial, const Eigen::Vector3d& fixed_centre,
                                            const std::vector<int>& strides, const LinearProgress& progress) {
  const AffineParameterisation param = start_parameterisation(options, initial, fixed_centre);
  const int k = options.dof;
  // The driver minimises f = -MI over z = p / scales (a unit step in z moves points by about 1 mm).
  const Eigen::VectorXd scales = parameter_scales(k, options.radius_mm);
  Eigen::VectorXd z = Eigen::VectorXd::Zero(k);
  LinearRegistrationResult result;
  result.transform = initial;
  result.params = z;
  struct Point {
    double f = 0.0;
    Eigen::VectorXd g;
    int64_t count = 0;
  };
  auto evaluate = [&](int level, const Eigen::VectorXd& zz) {
    const Eigen::VectorXd p = zz.cwiseProduct(scales);
    const MiEvaluation e = mi(level, param.matrix(p), true);
    Point point;
    point.f = -e.mi;
    point.count = e.count;
    point.g = -(param.jacobian(p, fixed_centre).transpose() * e.gradient).cwiseProduct(scales);
    return point;
  };
  for (int level = 0; level < static_cast<int>(options.levels.size()); ++level) {
    const auto start = std::chrono::steady_clock::now();
    LinearLevelReport report;
    report.level = options.levels[static_cast<size_t>(level)];
    report.stride = level < static_cast<int>(strides.size()) ? strides[static_cast<size_t>(level)] : 1;
    Point current = evaluate(level, z);
    if (level == 0) result.initial_mi = -current.f;
    Eigen::MatrixXd h_inverse = Eigen::MatrixXd::Identity(k, k);
    bool first_step = true, converged = false;
    // The first step moves points by about half the level's sample spacing.
    const double first_length = 0.5 * report.level.spacing_mm;
    for (int it = 0; it < options.max_iterations && !converged; ++it) {
      if (current.count < options.min_points) {
        result.failure = fmt::format("only {} sample points overlap the moving image at level {} (need {})",
                                     current.count, level + 1, options.min_points);
        return result;
      }
      Eigen::VectorXd direction = -h_inverse * current.g;
      if (first_step) direction *= first_length / std::max(current.g.norm(), 1e-300);
      double slope = current.g.dot(direction);
      if (!(slope < 0.0)) {  // not a descent direction: restart from steepest descent
        h_inverse.setIdentity();
        direction = -current.g * (first_length / std::max(current.g.norm(), 1e-300));
        slope = current.g.dot(direction);
      }
      double step = 1.0;
      bool accepted = false;
      Point next;
      Eigen::VectorXd z_next;
      for (int halving = 0; halving <= kMaxHalvings; ++halving, step *= 0.5) {
        z_next = z + step * direction;
        next = evaluate(level, z_next);
        if (next.count >= options.min_points && next.f <= current.f + kArmijo * step * slope) {
          accepted = true;
          break;
        }
      }
      if (!accepted) {
        converged = true;  // no step along the descent direction lowers the cost: a minimum at this level
        break;
      }
      const Eigen::VectorXd s = z_next - z, y = next.g - current.g;
      const double sy = s.dot(y);
      if (sy > 1e-12) {
        if (first_step) h_inverse *= sy / y.dot(y);
        const Eigen::MatrixXd i = Eigen::MatrixXd::Identity(k, k);
        const double rho = 1.0 / sy;
        h_inverse = (i - rho * s * y.transpose()) * h_inverse * (i - rho * y * s.transpose()) + rho * s * s.transpose();
        first_step = false;
      }
      const double moved =
          max_corner_displacement(param.matrix(z.cwiseProduct(scales)), param.matrix(z_next.cwiseProduct(scales)),
                                  param.centre, options.radius_mm);
      z = z_next;
      current = std::move(next);
      ++report.iterations;
      converged = moved < options.tolerance_mm;
      report.points = current.count;
      report.mi = -current.f;
      report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (progress) progress(report, level);
    }
    report.points = current.count;
    report.mi = -current.f;
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.finished = true;
    if (progress) progress(report, level);
    result.levels.push_back(report);
    result.iterations += report.iterations;
    result.converged = converged;
    result.mi = report.mi;
    result.params = z.cwiseProduct(scales);
    result.transform = param.matrix(result.params);
  }
  return result;
}

}  // namespace rtf
