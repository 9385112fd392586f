// Tile rows of the upper triangle (block pair by block pair when the series exceed the device budget), each launch's
// edges sorted on the device (kernels/correlation_tile.cl's four kernels), the edge list's overflow handling, and the
// read-back.
#include "core/connectome/thresholded_correlation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/connectome/edge_list.hpp"
#include "core/device/buffer.hpp"
#include "core/device/launch.hpp"

namespace rtf {

namespace {
constexpr int kTile = 128;                 // kernels/correlation_tile.cl TS
constexpr int64_t kTilesPerLaunch = 4096;  // a band of rows holds about this many tiles (progress, overflow)
static_assert(kTile == kTileRowNodes);
}  // namespace

TileRows resolve_tile_rows(TileRows rows, int64_t nodes) {
  const int64_t tiles = (nodes + kTileRowNodes - 1) / kTileRowNodes;
  if (rows.end < 0) rows.end = tiles;
  if (rows.first < 0 || rows.first > rows.end || rows.end > tiles) {
    throw std::invalid_argument(
        fmt::format("tile rows [{}, {}) outside the {} rows of {} nodes", rows.first, rows.end, tiles, nodes));
  }
  return rows;
}

// The work buffers of a call (ResidentSeries keeps them for the next): two edge lists (a band's edges are read, on the
// transfer queue, while the next band runs into the other list), the sort's staging and the launches' tile and row
// scans, sized for `most_tiles` tiles and `most_rows` tile rows per launch.
struct CorrelationWorkspace {
  CorrelationWorkspace(Device& d, int64_t edges, int64_t tiles, int64_t rows)
      : device(&d),
        capacity(edges),
        most_tiles(tiles),
        most_rows(rows),
        lists{DeviceEdgeList(d, edges), DeviceEdgeList(d, edges)},
        tiled(d, 3 * static_cast<size_t>(lists[0].capacity())),
        tile_at(d, 2 * static_cast<size_t>(tiles)),
        counts(d, static_cast<size_t>(tiles * kTile)),
        offsets(d, static_cast<size_t>(tiles * kTile)),
        row_edges(d, static_cast<size_t>(rows * kTile)),
        row_start(d, static_cast<size_t>(rows * kTile)) {}
  bool fits(const Device& d, int64_t cap, int64_t tiles, int64_t rows) const {
    return device == &d && capacity == cap && most_tiles >= tiles && most_rows >= rows;
  }
  const Device* device;
  int64_t capacity, most_tiles, most_rows;
  std::array<DeviceEdgeList, 2> lists;
  DeviceBuffer<int32_t> tiled, tile_at, counts, offsets, row_edges, row_start;
};

void thresholded_correlations(Device& device, const NodeSeries& series, const CorrelationThreshold& threshold,
                              const EdgeSink& sink, const TileRowProgress& progress, int64_t max_edges,
                              int64_t series_bytes, TileRows range, ResidentSeries* resident) {
  if (!std::isfinite(threshold.value)) throw std::invalid_argument("correlation threshold must be finite");
  if (!series.normalised) throw std::invalid_argument("thresholded_correlations: the series are not normalised");
  const auto n = static_cast<int64_t>(series.nodes());
  if (n > std::numeric_limits<int32_t>::max()) throw std::invalid_argument("more than 2^31 nodes");
  const int64_t tiles = (n + kTile - 1) / kTile;
  range = resolve_tile_rows(range, n);
  if (resident != nullptr && resident->series != nullptr &&
      (resident->series != &series || resident->device != &device)) {
    throw std::invalid_argument("thresholded_correlations: the resident series holds another series or device");
  }
  if (range.first == range.end) return;
  const int64_t lp64 = series.padded;
  // Blocks of `block` nodes (a multiple of kTile): all N in one when they fit the budget and one allocation, else
  // the most that two buffers (rows, columns) within the budget hold.
  const int64_t budget = series_memory_budget(device, series_bytes);
  const auto max_alloc =
      static_cast<int64_t>(std::min<uint64_t>(device.info().max_alloc_bytes, std::numeric_limits<int64_t>::max()));
  const int64_t row_bytes = lp64 * static_cast<int64_t>(sizeof(float));
  int64_t block = n;
  if (n * row_bytes > std::min(budget, max_alloc)) {
    block = std::min(budget / 2, max_alloc) / row_bytes / kTile * kTile;
    if (block < kTile) {
      throw std::invalid_argument(fmt::format(
          "thresholded_correlations: {} nodes of {} floats ({} bytes) exceed the device budget of {} bytes, "
          "which must hold two blocks of {} nodes ({} bytes) to tile them",
          n, lp64, n * row_bytes, budget, kTile, 2 * kTile * row_bytes));
    }
  }
  const int64_t blocks = (n + block - 1) / block, block_tiles = (block + kTile - 1) / kTile;
  // The default list: one full row of tiles (N x 128 pairs), with its three buffers (two lists, the sort's staging)
  // within a fifth of the device's memory, and at least one tile (a row of tiles beyond it is repeated in parts).
  const auto list_memory_edges = static_cast<int64_t>(device.info().global_mem_bytes / 5 / (3 * sizeof(Edge)));
  const int64_t capacity =
      max_edges > 0 ? max_edges : std::max<int64_t>(std::min(n * kTile, list_memory_edges), kTile * kTile);
  const cl_command_queue q = device.queue();
  const std::vector<std::string> defines{fmt::format("ABSOLUTE={}", threshold.absolute ? 1 : 0)};
  ClKernel kernel = device.kernel("correlation_tile.cl", "correlation_tile", defines);
  ClKernel scan_segments = device.kernel("correlation_tile.cl", "edge_segments_scan", defines);
  ClKernel scan_rows = device.kernel("correlation_tile.cl", "edge_rows_scan", defines);
  ClKernel gather = device.kernel("correlation_tile.cl", "edge_segments_gather", defines);
  // One block with `resident`: the series held there (uploaded by its first call). Otherwise this call's buffers, the
  // rows' block uploaded for each block row below.
  const bool held = blocks == 1 && resident != nullptr;
  if (held && resident->series == nullptr) {
    resident->z = DeviceBuffer<float>(device, series.z.size(), CL_MEM_READ_ONLY);
    resident->z.write(q, series.z);
    resident->valid = DeviceBuffer<uint8_t>(device, series.valid.size(), CL_MEM_READ_ONLY);
    resident->valid.write(q, series.valid);
    resident->series = &series;
    resident->device = &device;
    ++resident->uploads;
  }
  DeviceBuffer<float> zr_here, zc;
  DeviceBuffer<uint8_t> valid_here;
  if (!held) {
    zr_here = DeviceBuffer<float>(device, static_cast<size_t>(block * lp64), CL_MEM_READ_ONLY);
    if (blocks > 1) zc = DeviceBuffer<float>(device, static_cast<size_t>(block * lp64), CL_MEM_READ_ONLY);
    valid_here = DeviceBuffer<uint8_t>(device, series.valid.size(), CL_MEM_READ_ONLY);
    valid_here.write(q, series.valid);
  }
  DeviceBuffer<float>& zr = held ? resident->z : zr_here;
  const DeviceBuffer<uint8_t>& valid = held ? resident->valid : valid_here;
  const auto threshold_f = static_cast<float>(threshold.value);
  const int ni = static_cast<int>(n), lp = static_cast<int>(series.padded);
  // Bands of about kTilesPerLaunch tiles (one row of tiles at least) over each column block; the launches' largest
  // tile count and rows size the sorting's buffers, which the launches share (one compute queue runs them in turn).
  const auto band_of = [](int64_t cols) { return std::max<int64_t>(1, kTilesPerLaunch / std::max<int64_t>(cols, 1)); };
  int64_t most_tiles = 1, most_rows = 1;
  for (int64_t bj = 0; bj < blocks; ++bj) {
    const int64_t cols = std::min(tiles, (bj + 1) * block_tiles) - bj * block_tiles;
    most_tiles = std::max(most_tiles, band_of(cols) * cols);
    most_rows = std::max(most_rows, band_of(cols));
  }
  // The work buffers: the last call's where `resident` kept ones of this device, capacity and at least these sizes.
  std::shared_ptr<CorrelationWorkspace> kept = resident != nullptr ? resident->workspace : nullptr;
  if (!kept || !kept->fits(device, capacity, most_tiles, most_rows)) {
    kept.reset();  // an unfit one is freed before the new one is made
    if (resident != nullptr) resident->workspace.reset();
    kept = std::make_shared<CorrelationWorkspace>(device, capacity, most_tiles, most_rows);
    if (resident != nullptr) {
      resident->workspace = kept;
      ++resident->workspaces;
    }
  }
  CorrelationWorkspace& w = *kept;
  std::array<DeviceEdgeList, 2>& lists = w.lists;
  const int cap = lists[0].capacity();
  DeviceBuffer<int32_t>&tiled = w.tiled, &tile_at = w.tile_at, &counts = w.counts, &offsets = w.offsets;
  DeviceBuffer<int32_t>&row_edges = w.row_edges, &row_start = w.row_start;
  const auto upload = [&](DeviceBuffer<float>& z, int64_t b) {  // block b's rows
    const int64_t first = b * block, rows = std::min(block, n - first);
    z.write(q, std::span<const float>(series.z).subspan(static_cast<size_t>(first * lp64),
                                                        static_cast<size_t>(rows * lp64)));
  };
  // The block pair's buffers: row tiles come from `rows` (its first node row_base), column tiles from `cols`.
  const DeviceBuffer<float>* cols = &zr;
  int row_base = 0, col_base = 0;
  // Row tiles [ti0, ti0 + rows) x column tiles [tj0, tj0 + ncols) into list `which` (those below the diagonal skip
  // themselves).
  const auto submit = [&](int64_t ti0, int64_t rows, int64_t tj0, int64_t ncols, int which) {
    lists[which].reset(q);
    const int c = static_cast<int>(ncols), launch_rows = static_cast<int>(rows * kTile);
    set_args(kernel, zr, *cols, valid, ni, lp, static_cast<int>(ti0), static_cast<int>(tj0), row_base, col_base,
             threshold_f, lists[which].count(), cap, tiled, tile_at, counts, c);
    launch<2>(q, kernel, {static_cast<size_t>(ncols) * 16, static_cast<size_t>(rows) * 16}, {16, 16});
    set_args(scan_segments, counts, offsets, row_edges, c);
    launch<1>(q, scan_segments, {static_cast<size_t>(launch_rows) * 256}, {256});
    set_args(scan_rows, row_edges, row_start, launch_rows);
    launch<1>(q, scan_rows, {256}, {256});
    set_args(gather, tiled, tile_at, counts, offsets, row_start, c, cap, lists[which].edges());
    return launch<2>(q, gather, {static_cast<size_t>(ncols) * 256, static_cast<size_t>(rows)}, {256, 1});
  };
  // A launch's edges to the sink; one that overflowed its list is repeated in halves (rows first, then the columns of
  // a single row), each waited for.
  std::function<void(int64_t, int64_t, int64_t, int64_t, int, cl_event)> settle =
      [&](int64_t ti0, int64_t rows, int64_t tj0, int64_t ncols, int which, cl_event done) {
        const int64_t found = lists[which].drain(done != nullptr ? device.transfer_queue() : q, sink, done);
        if (found <= cap) return;
        const auto again = [&](int64_t a, int64_t r, int64_t b, int64_t c) {
          if (c <= 0) return;
          const ClEvent e = submit(a, r, b, c, which);
          settle(a, r, b, c, which, e.get());
        };
        if (rows > 1) {
          const int64_t second = ti0 + rows / 2, tj_second = std::max(tj0, second);
          again(ti0, rows / 2, tj0, ncols);
          again(second, rows - rows / 2, tj_second, tj0 + ncols - tj_second);
        } else if (ncols > 1) {
          again(ti0, 1, tj0, ncols / 2);
          again(ti0, 1, tj0 + ncols / 2, ncols - ncols / 2);
        } else {
          throw std::runtime_error(
              fmt::format("a {} x {} tile has {} edges, more than the list's {}", kTile, kTile, found, cap));
        }
      };
  struct Pending {
    int64_t ti0 = 0, rows = 0, tj0 = 0, ncols = 0;
    int which = 0;
    ClEvent done;
  };
  std::optional<Pending> pending;
  const auto settle_pending = [&] {
    if (!pending) return;
    settle(pending->ti0, pending->rows, pending->tj0, pending->ncols, pending->which, pending->done.get());
    pending.reset();
  };
  int next = 0;
  // Block pairs I <= J over the blocks holding rows of the range: block I's rows uploaded once per I (held: already
  // there), block J's as J advances (I == J: the same buffer). Within a pair, bands of tile rows of about
  // kTilesPerLaunch tiles. Progress in tile rows of the range: block I's rows, shared out over its pairs, so it rises
  // monotonically to the range's rows (with one block: the rows of each band as it completes).
  const int64_t range_rows = range.end - range.first;
  for (int64_t bi = range.first / block_tiles; bi * block_tiles < range.end; ++bi) {
    const int64_t ti_first = std::max(bi * block_tiles, range.first);
    const int64_t ti_end = std::min({tiles, (bi + 1) * block_tiles, range.end});
    const int64_t row_tiles = ti_end - ti_first, pairs = blocks - bi;
    if (!held) upload(zr, bi);
    row_base = static_cast<int>(bi * block);
    for (int64_t bj = bi; bj < blocks; ++bj) {
      if (bj == bi) {
        cols = &zr;
      } else {
        upload(zc, bj);
        cols = &zc;
      }
      col_base = static_cast<int>(bj * block);
      const int64_t tj_first = bj * block_tiles, tj_end = std::min(tiles, tj_first + block_tiles);
      const int64_t band = band_of(tj_end - tj_first);
      for (int64_t ti = ti_first; ti < ti_end; ti += band) {
        const int64_t rows = std::min(band, ti_end - ti), tj0 = std::max(ti, tj_first);
        const int which = next++ % 2;
        ClEvent done = submit(ti, rows, tj0, tj_end - tj0, which);
        settle_pending();  // the band before, while this one runs
        pending = Pending{ti, rows, tj0, tj_end - tj0, which, std::move(done)};
        const int64_t done_in_block = (bj - bi) * row_tiles + (ti + rows - ti_first);
        if (progress) progress(ti_first - range.first + done_in_block / pairs, range_rows);
      }
      settle_pending();  // before the column block's buffer is replaced
    }
  }
}

}  // namespace rtf
