// A connectome's pairs cut into chunks of 128-node tile rows of the upper triangle, to spread over devices and MPI
// ranks (core/scale/chunk_job.hpp, docs/scale.md): row bounds of balanced work (about the same number of tiles per
// chunk, from the triangle's cumulative counts, fixed by N), a chunk's edges as bytes sorted by (i, j) (the same
// payload wherever it ran), and a correlation pass run as a chunk job whose edges reach rank 0 in chunk order (each
// device keeping the series between its chunks of the pass). Each pair's r is computed the same way in any tile row,
// so the merged edges equal one device's bit for bit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/connectome/kendall.hpp"
#include "core/connectome/node_series.hpp"
#include "core/connectome/thresholded_correlation.hpp"
#include "core/scale/chunk_job.hpp"

namespace rtf {

// Tile rows of N nodes: ceil(N / 128).
int64_t tile_row_count(int64_t nodes);

// Tiles of the upper triangle of `rows` tile rows in rows [0, row): row t holds rows - t tiles.
int64_t tiles_before_row(int64_t rows, int64_t row);

// shares.size() + 1 ascending row bounds from 0 to tile_row_count(nodes): chunk c is rows [bounds[c], bounds[c + 1]),
// at least one row, ending at the first row where the triangle's cumulative tiles reach the chunks' cumulative share
// (shares: positive relative sizes). With more chunks than rows, the first `rows` shares' chunks are kept (each one
// row). No rows (N = 0): {0, 0}.
std::vector<int64_t> tile_row_bounds(int64_t nodes, const std::vector<double>& shares);

// `chunks` (clamped to [1, rows]) of equal shares.
std::vector<int64_t> balanced_tile_row_bounds(int64_t nodes, int64_t chunks);

// The connectome pass's chunks for N nodes. From 96 tile rows: 48 chunks holding three quarters of the tiles, then
// 48 a third their size, so that the devices run out of work together at the end of the pass (equal tiles are not
// of equal time); fewer rows: equal chunks, 64 or one per row. Fixed by N, not by the devices, so the chunk files of a
// stopped run serve a restart on other devices or ranks.
std::vector<int64_t> connectome_chunk_bounds(int64_t nodes);
int64_t connectome_chunk_count(int64_t nodes);

// One device's series kept between the chunks of a pass, for whichever method runs (one per device slot).
struct ResidentCorrelation {
  ResidentSeries normalised;  // Pearson, Spearman
  ResidentKendall raw;        // Kendall's tau-b
  int64_t uploads() const { return normalised.uploads + raw.uploads; }
};

// The edges of `rows` on one device: thresholded_correlations for a normalised series (Pearson, Spearman),
// kendall_correlations for a raw one (Kendall's tau-b). `resident`, given, keeps the series on the device for the
// next call with the same series and device (ResidentSeries, ResidentKendall); without it each call uploads it.
void correlation_rows(Device& device, const NodeSeries& series, const CorrelationThreshold& threshold, TileRows rows,
                      const EdgeSink& sink, ResidentCorrelation* resident = nullptr);

// One chunk's bytes (the edge count, then the edges sorted by (i, j)) built from a pass's launches as they arrive, so
// that a dense chunk's ~10^8 edges are copied once on the host and sorted there only when they must be: append each
// launch's edges with `sorted` true when they are sorted by (i, j) (thresholded_correlations' launches; Kendall's are
// not); take() sorts the whole (sort_edges on `workers` host threads, 0: all) only when a launch was unsorted or two
// launches interleaved (series in blocks, a split launch). expect() makes room for that many edges in all (with huge
// pages), so that the bytes are not moved as they grow: a move of ~1 GB into fresh pages costs more than the copy.
class EdgePayload {
 public:
  EdgePayload();
  void expect(size_t edges);
  void append(std::span<const Edge> edges, bool sorted);
  size_t size() const { return count_; }
  bool needs_sort() const { return !sorted_; }
  ChunkBytes take(size_t workers = 0);

 private:
  ChunkBytes bytes_;
  size_t count_ = 0;
  bool sorted_ = true;
  Edge last_;
};

// A chunk's edges (any order) as bytes, sorted by (i, j) (EdgePayload); and back, appended to `out`
// (std::runtime_error for a damaged payload).
ChunkBytes edges_to_bytes(const std::vector<Edge>& edges, size_t workers = 0);
void append_edges(const ChunkBytes& bytes, std::vector<Edge>& out);
// The edges of a chunk's bytes in place (std::runtime_error for a damaged payload); valid while `bytes` lives.
std::span<const Edge> edges_in_bytes(const ChunkBytes& bytes);

// Rank 0's series (prepared there: mask, normalisation on its first device) sent to every other rank, which passes an
// empty one: every rank then correlates the same floats whatever its devices. No-op for a job of one process.
void broadcast_series(const Ranks& ranks, NodeSeries& series);

// A hash of the series (floats, validity, method, length): the chunk key's input part.
std::string series_key(const NodeSeries& series);

// Every rank's series made equal to rank 0's, where each rank prepared its own from the same inputs (at the same
// time, instead of waiting for rank 0's): rank 0's digest of its series (series_key and the node -> voxel map) goes to
// every rank, and only when some rank's differs (devices that normalise in other roundings, a mask made by another
// device) is rank 0's whole series sent (broadcast_series) to every rank. Returns series_key of the series now held
// (the same on every rank); `sent`, given, says whether rank 0's series had to be sent.
std::string share_series(const Ranks& ranks, NodeSeries& series, bool* sent = nullptr);

struct SpreadPassOptions {
  std::string key;                  // series_key and anything else that changes the edges (the method)
  std::filesystem::path chunk_dir;  // chunk files for a restart (empty: none)
  ChunkProgress progress;           // chunks done, on rank 0
  ChunkJobStats* stats = nullptr;   // this rank's counts and times of the pass
  // Given, set to this rank's uploads of the series in the pass: one per device that computed a chunk (the series
  // stays on a device for its later chunks), or none where it exceeds one block on the device (uploaded in blocks).
  int64_t* series_uploads = nullptr;
};

// One pass over every pair of `series` (the same on every rank) spread over the workers' devices and ranks in the
// chunks of connectome_chunk_bounds. The threshold is rank 0's (sent to every rank); the chunk key is options.key with
// the threshold and the chunking. `sink` is called on rank 0 only, once per chunk in chunk order, with the chunk's
// edges sorted by (i, j). Each device keeps the series from its first chunk of the pass to the pass's end
// (ResidentCorrelation). A failure on any rank or device ends the job (Workers::run).
void spread_correlations(Workers& workers, const NodeSeries& series, const CorrelationThreshold& threshold,
                         const EdgeSink& sink, const SpreadPassOptions& options);

}  // namespace rtf
