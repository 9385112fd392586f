// Tile rows of the upper triangle, the edge list's overflow handling, and the read-back.
#include "core/connectome/thresholded_correlation.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/device/buffer.hpp"
#include "core/device/launch.hpp"

namespace rtf {

namespace {
constexpr int kTile = 128;                 // kernels/correlation_tile.cl TS
constexpr int64_t kTilesPerLaunch = 4096;  // a band of rows holds about this many tiles (progress, overflow)
}  // namespace

void thresholded_correlations(Device& device, const NodeSeries& series, const CorrelationThreshold& threshold,
                              const EdgeSink& sink, const TileRowProgress& progress, int64_t max_edges) {
  if (!std::isfinite(threshold.value)) throw std::invalid_argument("correlation threshold must be finite");
  if (!series.normalised) throw std::invalid_argument("thresholded_correlations: the series are not normalised");
  const auto n = static_cast<int64_t>(series.nodes());
  if (n > std::numeric_limits<int32_t>::max()) throw std::invalid_argument("more than 2^31 nodes");
  const int64_t tiles = (n + kTile - 1) / kTile;
  const int64_t capacity = max_edges > 0 ? max_edges : std::max<int64_t>(n * kTile, 1);
  const cl_command_queue q = device.queue();
  ClKernel kernel = device.kernel("correlation_tile.cl", "correlation_tile",
                                  {fmt::format("ABSOLUTE={}", threshold.absolute ? 1 : 0)});
  DeviceBuffer<float> z(device, series.z.size(), CL_MEM_READ_ONLY);
  z.write(q, series.z);
  DeviceBuffer<uint8_t> valid(device, series.valid.size(), CL_MEM_READ_ONLY);
  valid.write(q, series.valid);
  DeviceBuffer<int32_t> count(device, 1), ei(device, static_cast<size_t>(capacity)),
      ej(device, static_cast<size_t>(capacity));
  DeviceBuffer<float> er(device, static_cast<size_t>(capacity));
  std::vector<int32_t> hi, hj;
  std::vector<float> hr;
  std::vector<Edge> edges;
  const auto threshold_f = static_cast<float>(threshold.value);
  const int ni = static_cast<int>(n), lp = static_cast<int>(series.padded),
            cap = static_cast<int>(std::min<int64_t>(capacity, std::numeric_limits<int32_t>::max()));
  // Row tiles [ti0, ti0 + rows) x column tiles [tj0, tj0 + cols) (those below the diagonal skip themselves); an
  // overflowing launch is repeated in halves: rows first, then the columns of a single row.
  std::function<void(int64_t, int64_t, int64_t, int64_t)> run = [&](int64_t ti0, int64_t rows, int64_t tj0,
                                                                    int64_t cols) {
    count.fill(q, 0);
    set_args(kernel, z, valid, ni, lp, static_cast<int>(ti0), static_cast<int>(tj0), threshold_f, count, cap, ei, ej,
             er);
    launch<2>(q, kernel, {static_cast<size_t>(cols) * 16, static_cast<size_t>(rows) * 16}, {16, 16}, {},
              EventMode::kNone);
    int32_t found = 0;
    count.read(q, std::span<int32_t>(&found, 1));
    if (found > cap) {
      if (rows > 1) {
        run(ti0, rows / 2, tj0, cols);
        run(ti0 + rows / 2, rows - rows / 2, ti0 + rows / 2, tiles - (ti0 + rows / 2));
      } else if (cols > 1) {
        run(ti0, 1, tj0, cols / 2);
        run(ti0, 1, tj0 + cols / 2, cols - cols / 2);
      } else {
        throw std::runtime_error(
            fmt::format("a {} x {} tile has {} edges, more than the list's {}", kTile, kTile, found, cap));
      }
      return;
    }
    if (found == 0) return;
    hi.resize(static_cast<size_t>(found));
    hj.resize(static_cast<size_t>(found));
    hr.resize(static_cast<size_t>(found));
    ei.read(q, hi);
    ej.read(q, hj);
    er.read(q, hr);
    edges.resize(static_cast<size_t>(found));
    for (size_t k = 0; k < edges.size(); ++k) edges[k] = {hi[k], hj[k], hr[k]};
    sink(edges);
  };
  const int64_t band = std::max<int64_t>(1, kTilesPerLaunch / std::max<int64_t>(tiles, 1));
  for (int64_t ti = 0; ti < tiles; ti += band) {
    const int64_t rows = std::min(band, tiles - ti);
    run(ti, rows, ti, tiles - ti);
    if (progress) progress(ti + rows, tiles);
  }
}

}  // namespace rtf
