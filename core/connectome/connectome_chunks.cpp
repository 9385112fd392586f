// Chunks of tile rows: balanced bounds, edge payloads, the series sent to every rank, and the pass as a chunk job.
#include "core/connectome/connectome_chunks.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string_view>

#include "core/connectome/edge_sort.hpp"
#include "core/connectome/kendall.hpp"
#include "core/scale/broadcast.hpp"
#include "core/scale/job_key.hpp"
#include "core/util/host_threads.hpp"

namespace rtf {

namespace {

constexpr int64_t kConnectomeChunks = 64;       // equal chunks below 2 x 48 tile rows
constexpr int64_t kConnectomeLargeChunks = 48;  // large chunks (3/4 of the tiles), then as many of a third the size

}  // namespace

int64_t tile_row_count(int64_t nodes) {
  return (std::max<int64_t>(nodes, 0) + kTileRowNodes - 1) / kTileRowNodes;
}

int64_t tiles_before_row(int64_t rows, int64_t row) {
  return row * rows - row * (row - 1) / 2;
}

std::vector<int64_t> tile_row_bounds(int64_t nodes, const std::vector<double>& shares) {
  const int64_t rows = tile_row_count(nodes);
  if (rows == 0) return {0, 0};
  if (shares.empty()) throw std::invalid_argument("tile_row_bounds: no chunks");
  const auto chunks = std::min<int64_t>(static_cast<int64_t>(shares.size()), rows);
  const std::vector<double> kept(shares.begin(), shares.begin() + chunks);
  const double sum = std::accumulate(kept.begin(), kept.end(), 0.0);
  const int64_t total = tiles_before_row(rows, rows);
  std::vector<int64_t> bounds{0};
  double cumulative = 0.0;
  for (int64_t c = 1; c < chunks; ++c) {
    cumulative += kept[static_cast<size_t>(c) - 1];
    const auto target = static_cast<int64_t>(std::ceil(cumulative / sum * static_cast<double>(total)));
    // The first row whose cumulative count reaches the target (the count rises with the row).
    int64_t lo = 0, hi = rows;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (tiles_before_row(rows, mid) >= target) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    // At least one row per chunk, and rows left for the chunks after it.
    bounds.push_back(std::clamp(lo, bounds.back() + 1, rows - (chunks - c)));
  }
  bounds.push_back(rows);
  return bounds;
}

std::vector<int64_t> balanced_tile_row_bounds(int64_t nodes, int64_t chunks) {
  return tile_row_bounds(nodes, std::vector<double>(static_cast<size_t>(std::max<int64_t>(1, chunks)), 1.0));
}

std::vector<int64_t> connectome_chunk_bounds(int64_t nodes) {
  if (tile_row_count(nodes) < 2 * kConnectomeLargeChunks) {
    return balanced_tile_row_bounds(nodes, std::min(kConnectomeChunks, tile_row_count(nodes)));
  }
  std::vector<double> shares(static_cast<size_t>(kConnectomeLargeChunks), 3.0);
  shares.resize(static_cast<size_t>(2 * kConnectomeLargeChunks), 1.0);
  return tile_row_bounds(nodes, shares);
}

int64_t connectome_chunk_count(int64_t nodes) {
  return static_cast<int64_t>(connectome_chunk_bounds(nodes).size()) - 1;
}

void correlation_rows(Device& device, const NodeSeries& series, const CorrelationThreshold& threshold, TileRows rows,
                      const EdgeSink& sink, ResidentCorrelation* resident) {
  if (series.normalised) {
    thresholded_correlations(device, series, threshold, sink, {}, 0, 0, rows,
                             resident != nullptr ? &resident->normalised : nullptr);
  } else {
    kendall_correlations(device, series, threshold, sink, {}, int64_t{2} << 30, rows,
                         resident != nullptr ? &resident->raw : nullptr);
  }
}

EdgePayload::EdgePayload() {
  bytes_.resize(sizeof(uint64_t));  // the count, written by take()
}

void EdgePayload::expect(size_t edges) {
  const size_t bytes = sizeof(uint64_t) + edges * sizeof(Edge);
  if (bytes > bytes_.capacity()) reserve_huge(bytes_, bytes);
}

void EdgePayload::append(std::span<const Edge> edges, bool sorted) {
  if (edges.empty()) return;
  if (!sorted || (count_ > 0 && !edge_before(last_, edges.front()))) sorted_ = false;
  if (bytes_.size() + edges.size() * sizeof(Edge) > bytes_.capacity()) expect((count_ + edges.size()) * 3 / 2);
  const size_t at = bytes_.size(), n = edges.size() * sizeof(Edge);
  bytes_.resize(at + n);  // unwritten (HostArray) until the copy
  std::memcpy(bytes_.data() + at, edges.data(), n);
  count_ += edges.size();
  last_ = edges.back();
}

ChunkBytes EdgePayload::take(size_t workers) {
  const auto count = static_cast<uint64_t>(count_);
  std::memcpy(bytes_.data(), &count, sizeof(count));
  if (!sorted_) {
    auto* edges = reinterpret_cast<Edge*>(bytes_.data() + sizeof(count));
    std::vector<Edge> all(edges, edges + count_);
    sort_edges(all, workers);
    std::copy(all.begin(), all.end(), edges);
    sorted_ = true;
  }
  count_ = 0;
  return std::move(bytes_);
}

ChunkBytes edges_to_bytes(const std::vector<Edge>& edges, size_t workers) {
  EdgePayload payload;
  payload.expect(edges.size());
  payload.append(edges, false);
  return payload.take(workers);
}

std::span<const Edge> edges_in_bytes(const ChunkBytes& bytes) {
  // The list's count, then the edges (written from a std::vector<Edge>: 8-byte aligned after the count).
  uint64_t n = 0;
  if (bytes.size() < sizeof(n)) throw std::runtime_error("connectome chunk: shorter than its edge count");
  std::memcpy(&n, bytes.data(), sizeof(n));
  if (n != (bytes.size() - sizeof(n)) / sizeof(Edge) || (bytes.size() - sizeof(n)) % sizeof(Edge) != 0) {
    throw std::runtime_error("connectome chunk: its size disagrees with its edge count");
  }
  return {reinterpret_cast<const Edge*>(bytes.data() + sizeof(n)), static_cast<size_t>(n)};
}

void append_edges(const ChunkBytes& bytes, std::vector<Edge>& out) {
  const std::span<const Edge> edges = edges_in_bytes(bytes);
  out.insert(out.end(), edges.begin(), edges.end());
}

void broadcast_series(const Ranks& ranks, NodeSeries& series) {
  if (ranks.size() == 1) return;
  ChunkBytes bytes;
  if (ranks.root()) {
    ChunkWriter w;
    w.value(static_cast<int32_t>(series.method))
        .value(static_cast<uint8_t>(series.normalised ? 1 : 0))
        .value(series.length)
        .value(series.padded)
        .values(series.voxels)
        .values(series.z)
        .values(series.valid);
    bytes = w.take();
  }
  ranks.broadcast(bytes);
  if (ranks.root()) return;
  ChunkReader r(bytes);
  series.method = static_cast<CorrelationMethod>(r.value<int32_t>());
  series.normalised = r.value<uint8_t>() != 0;
  series.length = r.value<int64_t>();
  series.padded = r.value<int64_t>();
  series.voxels = r.values<int64_t>();
  series.z = r.values<float>();
  series.valid = r.values<uint8_t>();
  if (!r.done() || series.z.size() != series.voxels.size() * static_cast<size_t>(series.padded) ||
      series.valid.size() != series.voxels.size()) {
    throw std::runtime_error("the node series from rank 0 arrived damaged");
  }
}

std::string series_key(const NodeSeries& series) {
  const auto method = static_cast<int32_t>(series.method);
  const uint8_t normalised = series.normalised ? 1 : 0;
  return job_key("connectome series",
                 {bytes_of_value(method), bytes_of_value(normalised), bytes_of_value(series.length),
                  bytes_of_value(series.padded), bytes_of(series.z), bytes_of(series.valid)});
}

std::string share_series(const Ranks& ranks, NodeSeries& series, bool* sent) {
  std::string key = series_key(series);
  if (sent != nullptr) *sent = false;
  if (ranks.size() == 1) return key;
  const bool differs = differs_from_root(ranks, job_key(key, {bytes_of(series.voxels)}));
  if (differs) {
    spdlog::warn("rank {}: its node series differs from rank 0's (another device or mask); rank 0's is used",
                 ranks.rank());
  }
  if (!ranks.any(differs)) return key;
  broadcast_series(ranks, series);
  if (sent != nullptr) *sent = true;
  return ranks.root() ? key : series_key(series);
}

void spread_correlations(Workers& workers, const NodeSeries& series, const CorrelationThreshold& threshold,
                         const EdgeSink& sink, const SpreadPassOptions& options) {
  // Rank 0's threshold on every rank (a density's cut comes from a sample each rank computed on its own devices).
  ChunkBytes shared;
  if (workers.root()) {
    ChunkWriter w;
    w.value(threshold.value).value(static_cast<uint8_t>(threshold.absolute ? 1 : 0));
    shared = w.take();
  }
  workers.ranks().broadcast(shared);
  ChunkReader r(shared);
  CorrelationThreshold t;
  t.value = r.value<double>();
  t.absolute = r.value<uint8_t>() != 0;
  const int64_t nodes = static_cast<int64_t>(series.nodes());
  const std::vector<int64_t> bounds = connectome_chunk_bounds(nodes);
  const auto chunks = static_cast<int64_t>(bounds.size()) - 1;
  const uint8_t absolute = t.absolute ? 1 : 0;
  ChunkJob job;
  job.name = "connectome tile rows";
  job.chunks = chunks;
  job.key =
      job_key("connectome chunks", {options.key, bytes_of_value(t.value), bytes_of_value(absolute), bytes_of(bounds)});
  job.chunk_dir = options.chunk_dir;
  // Each slot's series, kept from its first chunk to the end of the pass (a slot runs on one thread at a time).
  std::vector<ResidentCorrelation> resident(static_cast<size_t>(workers.device_count()));
  // A chunk that needs sorting on the host (launches interleaved or unsorted) is sorted on its device's share of the
  // host's cores.
  const size_t sort_threads = std::max<size_t>(1, host_thread_count() / static_cast<size_t>(workers.device_count()));
  // And the size of its last chunk, the room made for its next chunk's edges.
  std::vector<size_t> last_edges(static_cast<size_t>(workers.device_count()), 0);
  const bool launches_sorted = series.normalised;  // thresholded_correlations' launches; Kendall's are not
  job.compute = [&series, &bounds, &resident, &last_edges, t, sort_threads, launches_sorted](Device& device, int slot,
                                                                                             int64_t chunk) {
    // Where a chunk's time goes (the debug log): the pass with the edges' read-back, their copy into the chunk's
    // bytes, then a sort when the launches' edges were not sorted together.
    using Clock = std::chrono::steady_clock;
    const auto seconds_since = [](Clock::time_point t0) {
      return std::chrono::duration<double>(Clock::now() - t0).count();
    };
    double copying = 0.0;
    const auto t0 = Clock::now();
    EdgePayload payload;
    const int64_t rows = bounds[static_cast<size_t>(chunk) + 1] - bounds[static_cast<size_t>(chunk)];
    correlation_rows(
        device, series, t, {.first = bounds[static_cast<size_t>(chunk)], .end = bounds[static_cast<size_t>(chunk) + 1]},
        [&](std::span<const Edge> found) {
          throw_if_chunk_cancelled();  // a backup copy on another device finished these rows
          const auto c0 = Clock::now();
          if (payload.size() == 0) {
            // Room for the chunk at once: a quarter more than this device's last chunk, or the first launch's edges
            // for each of its tile rows (launches hold one row or more, the first the most pairs), the larger.
            payload.expect(
                std::max(last_edges.at(static_cast<size_t>(slot)) / 4 * 5, found.size() * static_cast<size_t>(rows)));
          }
          payload.append(found, launches_sorted);
          copying += seconds_since(c0);
        },
        &resident.at(static_cast<size_t>(slot)));
    const double pass = seconds_since(t0);
    const auto t1 = Clock::now();
    const size_t edges = payload.size();
    const bool sorting = payload.needs_sort();
    last_edges.at(static_cast<size_t>(slot)) = edges;
    ChunkBytes bytes = payload.take(sort_threads);
    spdlog::debug("connectome chunk {}: {} edges; pass {:.3f} s (copying the edges {:.3f} s), {} {:.3f} s", chunk,
                  edges, pass, copying, sorting ? "sorting" : "no sort needed", seconds_since(t1));
    return bytes;
  };
  // Rank 0 hands each chunk's edges to the sink in chunk order as they arrive, so that the results of a dense pass are
  // never all held at once.
  job.keep_results = false;
  job.in_order = true;
  job.on_result = [&sink](int64_t, const ChunkBytes& bytes) { sink(edges_in_bytes(bytes)); };
  workers.run(job, options.progress, options.stats);
  if (options.series_uploads != nullptr) {
    *options.series_uploads = 0;
    for (const ResidentCorrelation& held : resident) *options.series_uploads += held.uploads();
  }
}

}  // namespace rtf
