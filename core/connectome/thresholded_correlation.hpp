// Every pair of nodes whose correlation passes a threshold, on the device (kernels/correlation_tile.cl,
// docs/algorithms/connectome.md): the N x N matrix is never held; the upper triangle is computed in 128 x 128 tiles, a
// band of tile rows per launch, each tile thresholded on the device and the launch's edges sorted by (i, j) there into
// a list that the host reads after each launch. A launch whose edges overflow the list is split and repeated, so any
// threshold works with a list of bounded size. Series larger than the device's memory for them are uploaded in blocks
// of nodes, block pair by block pair; series that fit may stay on the device between calls (ResidentSeries: the chunks
// of one pass).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/connectome/node_series.hpp"
#include "core/device/buffer.hpp"
#include "core/device/device.hpp"

namespace rtf {

struct Edge {
  int32_t i = 0, j = 0;  // nodes, i < j
  float r = 0.0f;
};

struct CorrelationThreshold {
  double value = 0.5;     // keep r >= value
  bool absolute = false;  // keep |r| >= value (negative correlations too)
};

using EdgeSink = std::function<void(std::span<const Edge>)>;
using TileRowProgress = std::function<void(int64_t done, int64_t total)>;  // rows of 128-node tiles

// Rows [first, end) of 128-node tiles of the upper triangle: the pairs (i, j), i < j, with i in nodes [128 first,
// 128 end). The default: every row. A pair's r is computed the same way in any range, so the edges of ranges that
// cover the rows equal the whole's bit for bit (core/connectome/connectome_chunks.hpp spreads them over devices).
struct TileRows {
  int64_t first = 0;
  int64_t end = -1;  // -1: to the last row
};
constexpr int64_t kTileRowNodes = 128;

// The series kept on one device between calls of thresholded_correlations over them (the chunks of one pass that run
// on that device, core/connectome/connectome_chunks.hpp): the first call that holds all N nodes in one block uploads
// the series and validity here, later ones reuse them; calls over blocks (series beyond the budget) upload their
// blocks as they go and leave it alone. One per device, used by one thread at a time, for one series that must not
// change while held (a call with another series or device throws std::invalid_argument); freed with the object.
// It also keeps the calls' work buffers (the two edge lists, the sort's staging, ~4.6 GB at N 10^6 on an 80 GB GPU),
// so that a pass's chunks do not each allocate and free them.
struct CorrelationWorkspace;
struct ResidentSeries {
  const Device* device = nullptr;  // what it holds, set by the upload
  const NodeSeries* series = nullptr;
  DeviceBuffer<float> z;
  DeviceBuffer<uint8_t> valid;
  int64_t uploads = 0;                              // uploads of the series into it: 1 once held
  std::shared_ptr<CorrelationWorkspace> workspace;  // the work buffers of the last call, for the next
  int64_t workspaces = 0;                           // work buffers made (1 when every call reused the first's)
};

// Streams the edges of the tile rows `rows` to `sink`: one call per launch, its edges sorted by (i, j). Where the
// series are held in one block and no launch overflowed its list, the calls come in the order of their rows, so that
// their edges together are sorted too; series in blocks revisit each block's rows once per column block, and a launch
// repeated in parts over a single row of tiles gives parts that interleave by row (progress in rows of the range).
// `max_edges`: the edge
// list's capacity on the device (0: N x 128, one full row of tiles, as far as its buffers fit a fifth of the device's
// memory, and one tile at least). `series_bytes`: the device memory the series may
// take (0: series_memory_budget's automatic one); when N x padded floats exceed it, blocks of B nodes (B a multiple of
// 128, two blocks within the budget) are uploaded pair by pair, with the same tiles and so the same r bit for bit.
// `resident`, given, keeps a one-block series on the device for the next call (see ResidentSeries); without it each
// call uploads the series. Throws std::invalid_argument for a threshold that is not finite, more than 2^31 nodes, a
// budget smaller than two blocks of 128 nodes, rows outside 0 .. ceil(N / 128), or a `resident` holding another
// series or device.
void thresholded_correlations(Device& device, const NodeSeries& series, const CorrelationThreshold& threshold,
                              const EdgeSink& sink, const TileRowProgress& progress = {}, int64_t max_edges = 0,
                              int64_t series_bytes = 0, TileRows rows = {}, ResidentSeries* resident = nullptr);

// `rows` with end -1 resolved, checked against N nodes (std::invalid_argument naming the range otherwise).
TileRows resolve_tile_rows(TileRows rows, int64_t nodes);

}  // namespace rtf
