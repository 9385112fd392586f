// Gauss-Newton iterations over the pyramid levels, the inverse compositional update and the stopping rule.
#include "core/registration/gauss_newton.hpp"

#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <Eigen/LU>
#include <cmath>

namespace rtf {

RegistrationResult gauss_newton_register(const SumsProvider& sums, const RegistrationOptions& options,
                                         const Eigen::Matrix4d& initial, const Eigen::Vector3d& centre_mm) {
  constexpr double kDegrees = 180.0 / 3.14159265358979323846;
  const int n = options.intensity_model ? kMaxParams : kRigidParams;
  RegistrationResult result;
  result.transform = initial;
  for (size_t level = 0; level < options.levels.size(); ++level) {
    const bool last = level + 1 == options.levels.size();
    bool level_converged = false;
    for (int it = 0; it < options.max_iterations; ++it) {
      const NormalEquations eq = sums(static_cast<int>(level), result.transform, result.intensity);
      ++result.iterations;
      result.voxels = eq.count;
      result.rms_residual = eq.count > 0 ? std::sqrt(eq.sum_squared_residual / static_cast<double>(eq.count)) : 0.0;
      if (eq.count < options.min_voxels) {
        result.failure = fmt::format("only {} usable voxels (need {}): the volumes barely overlap or the mask is empty",
                                     eq.count, options.min_voxels);
        return result;
      }
      const Eigen::MatrixXd h = eq.h.topLeftCorner(n, n);
      const Eigen::VectorXd b = eq.b.head(n);
      const Eigen::LDLT<Eigen::MatrixXd> ldlt(h);
      if (ldlt.info() != Eigen::Success || !ldlt.isPositive() || ldlt.vectorD().minCoeff() <= 1e-12 * h.trace()) {
        result.failure = "singular normal equations (no image gradient to register on?)";
        return result;
      }
      const Eigen::VectorXd delta = ldlt.solve(b);
      if (!delta.allFinite()) {
        result.failure = "non-finite update (NaN in the volumes?)";
        return result;
      }
      RigidParams step;
      for (int a = 0; a < 3; ++a) {
        step.translation_mm[static_cast<size_t>(a)] = delta[a];
        step.rotation_deg[static_cast<size_t>(a)] = delta[3 + a] * kDegrees;
      }
      // Inverse compositional update: W(x; p) <- W(x; p) o W(x; delta)^-1.
      result.transform = result.transform * rigid_matrix(step, centre_mm).inverse();
      if (options.intensity_model) result.intensity += delta.tail<kIntensityParams>();
      const double moved = delta.head<3>().norm() + options.radius_mm * delta.segment<3>(3).norm();
      if (moved < options.tolerance_mm) {
        level_converged = true;
        break;
      }
    }
    if (last) result.converged = level_converged;
  }
  result.params = rigid_params(result.transform, centre_mm, 1e-5);
  if (!result.converged) {
    result.failure = fmt::format("did not converge in {} iterations at the finest level", options.max_iterations);
  }
  return result;
}

}  // namespace rtf
