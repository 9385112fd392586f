// A decoder's weights over the voxels from its weights over the training samples, w = X^T beta (the representer
// theorem: an L2-penalised linear model's weights lie in the span of its training samples), on the device
// (kernels/feature_weights.cl, docs/algorithms/decoding.md).
#pragma once

#include <Eigen/Core>
#include <cstdint>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"

namespace rtf {

constexpr int kMaxDecisionFunctions = 64;

// `x`: n samples x p features, row-major, on `device`; `beta`: n x M (M <= kMaxDecisionFunctions). Returns p x M.
// Throws std::invalid_argument for sizes that do not match.
Eigen::MatrixXd feature_weights(Device& device, const DeviceBuffer<float>& x, int64_t n, int64_t p,
                                const Eigen::MatrixXd& beta);

}  // namespace rtf
