// feature_weights: beta uploaded row-major (the kernel's [N][M]), the weights read back as p x M.
#include "core/decoding/feature_weights.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "core/device/launch.hpp"

namespace rtf {

Eigen::MatrixXd feature_weights(Device& device, const DeviceBuffer<float>& x, int64_t n, int64_t p,
                                const Eigen::MatrixXd& beta) {
  const int64_t m = beta.cols();
  if (n < 1 || p < 1 || beta.rows() != n || m < 1 || m > kMaxDecisionFunctions ||
      x.size() < static_cast<size_t>(n * p)) {
    throw std::invalid_argument(
        fmt::format("feature_weights: {} x {} features, beta {} x {}, a buffer of {}", n, p, beta.rows(), m, x.size()));
  }
  std::vector<double> rows(static_cast<size_t>(n * m));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < m; ++k) rows[static_cast<size_t>(i * m + k)] = beta(i, k);
  }
  DeviceBuffer<double> beta_buffer(device, rows.size());
  DeviceBuffer<double> w(device, static_cast<size_t>(m * p));
  const cl_command_queue q = device.queue();
  beta_buffer.write(q, rows);
  ClKernel kernel = device.kernel("feature_weights.cl", "feature_weights",
                                  {fmt::format("N={}", n), fmt::format("P={}", p), fmt::format("M={}", m)});
  set_args(kernel, x, beta_buffer, w);
  launch<1>(q, kernel, {static_cast<size_t>(p)}, {64}, {}, EventMode::kNone);
  Eigen::MatrixXd out(p, m);  // column k = function k's weights: the kernel's [M][P] read as p x M column-major
  w.read(q, std::span<double>(out.data(), static_cast<size_t>(m * p)));
  return out;
}

}  // namespace rtf
