// The Gram matrix of the decoders' samples, K = X X^T (n x n, double), on the device (kernels/gram_matrix.cl): every
// training set of a cross-validation is a submatrix of it, and every linear model with an L2 penalty is fitted from it
// in the span of its training samples (core/decoding/sample_space.hpp, docs/algorithms/decoding.md).
#pragma once

#include <Eigen/Core>
#include <cstdint>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"

namespace rtf {

// `x`: n samples x p features, row-major, on `device`. Features are summed in segments spread over the device's
// compute units (their partial sums: at most 256 MiB). Throws std::invalid_argument for n or p < 1 or a buffer
// smaller than n x p.
Eigen::MatrixXd gram_matrix(Device& device, const DeviceBuffer<float>& x, int64_t n, int64_t p);

}  // namespace rtf
