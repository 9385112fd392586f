// gram_matrix: segments chosen for about 8 work-groups per compute unit, the partial sums reduced on the device.
#include "core/decoding/gram_matrix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/device/launch.hpp"

namespace rtf {

namespace {
constexpr int64_t kTile = 16;
constexpr int64_t kPartialBytes = int64_t{256} << 20;
}  // namespace

Eigen::MatrixXd gram_matrix(Device& device, const DeviceBuffer<float>& x, int64_t n, int64_t p) {
  if (n < 1 || p < 1) throw std::invalid_argument(fmt::format("gram_matrix: {} samples x {} features", n, p));
  if (x.size() < static_cast<size_t>(n * p)) {
    throw std::invalid_argument(fmt::format("gram_matrix: a buffer of {} floats for {} x {}", x.size(), n, p));
  }
  const int64_t tiles = (n + kTile - 1) / kTile, blocks = tiles * (tiles + 1) / 2;
  const int64_t wanted = 8 * static_cast<int64_t>(std::max<uint32_t>(device.info().compute_units, 1));
  const int64_t feature_tiles = (p + kTile - 1) / kTile;
  int64_t segments = std::clamp<int64_t>((wanted + blocks - 1) / blocks, 1, feature_tiles);
  segments = std::max<int64_t>(1, std::min(segments, kPartialBytes / (n * n * 8)));
  const int64_t seg = (feature_tiles + segments - 1) / segments * kTile;
  segments = (p + seg - 1) / seg;
  const std::vector<std::string> defines{fmt::format("N={}", n), fmt::format("P={}", p), fmt::format("SEG={}", seg),
                                         fmt::format("TILE={}", kTile), fmt::format("S={}", segments)};
  ClKernel partial_kernel = device.kernel("gram_matrix.cl", "gram_partial", defines);
  ClKernel reduce_kernel = device.kernel("gram_matrix.cl", "gram_reduce", defines);
  const auto nn = static_cast<size_t>(n * n);
  DeviceBuffer<double> partial(device, nn * static_cast<size_t>(segments));
  DeviceBuffer<double> gram(device, nn);
  set_args(partial_kernel, x, partial);
  set_args(reduce_kernel, partial, gram);
  const cl_command_queue q = device.queue();
  const auto side = static_cast<size_t>(tiles * kTile), tile = static_cast<size_t>(kTile);
  launch<3>(q, partial_kernel, {side, side, static_cast<size_t>(segments)}, {tile, tile, 1}, {}, EventMode::kNone);
  launch<1>(q, reduce_kernel, {nn}, {64}, {}, EventMode::kNone);
  Eigen::MatrixXd k(n, n);  // symmetric: row-major on the device reads the same column-major
  gram.read(q, std::span<double>(k.data(), nn));
  return k;
}

}  // namespace rtf
