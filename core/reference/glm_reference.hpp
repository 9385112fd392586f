// Double-precision reference GLM, written for clarity (docs/algorithms/glm.md): ordinary least squares per voxel
// with explicit residuals, optionally on AR(1)-prewhitened data and design (y_t - rho y_(t-1), the first row scaled
// by sqrt(1 - rho^2)); contrast estimates, t and F. The device GLM (kernels/glm.cl) is tested against it.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/glm/glm_model.hpp"

namespace rtf::reference {

struct GlmResult {
  Eigen::MatrixXd beta;      // columns x voxels
  Eigen::VectorXd sigma2;    // voxels
  Eigen::MatrixXd contrast;  // t contrasts x voxels
  Eigen::MatrixXd t;         // t contrasts x voxels
  Eigen::MatrixXd f;         // F contrasts x voxels
  double dof = 0.0;
};

// Prais-Winsten AR(1) whitening of the rows of `m` (time along rows).
Eigen::MatrixXd ar1_whiten(const Eigen::MatrixXd& m, double rho);

// `data` is time x voxels. Undefined statistics (dof <= 0, zero residual variance, outside `mask`, contrasts that are
// not estimable) are NaN, as on the device.
GlmResult fit_glm(const Eigen::MatrixXd& data, const Eigen::MatrixXd& design, const std::vector<GlmContrast>& contrasts,
                  double rho = 0.0, std::optional<std::span<const uint8_t>> mask = std::nullopt);

}  // namespace rtf::reference
