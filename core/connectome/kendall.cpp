// Kendall's tau-b: tie counts on the host, time-pair chunks and node bands on the device; the series and what is
// derived from it made once per call or once per ResidentKendall.
#include "core/connectome/kendall.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "core/connectome/edge_list.hpp"
#include "core/connectome/kendall_ties.hpp"
#include "core/device/buffer.hpp"
#include "core/device/launch.hpp"

namespace rtf {

namespace {
constexpr int kTile = 64;          // kernels/kendall.cl TS
constexpr int kChunkWords = 1024;  // 32,768 time pairs per chunk
// A series with at most this many tied time pairs has them listed and corrected; more make its tile take the
// two-popcount path. The correction costs this many sign tests per pair at most (against ~L^2/64 popcounts saved).
constexpr int64_t kSparseTies = 64;
static_assert(kTileRowNodes % kTile == 0);
}  // namespace

std::vector<double> kendall_denominators(const NodeSeries& series) {
  const auto l = static_cast<double>(series.length);
  const double n0 = l * (l - 1) / 2;
  std::vector<double> d = kendall_ties(series, kTile, 0).tied;
  for (double& x : d) x = std::sqrt(std::max(0.0, n0 - x));
  return d;
}

void mark_constant_series(NodeSeries& series) {
  const std::vector<double> d = kendall_denominators(series);
  std::transform(d.begin(), d.end(), series.valid.begin(), [](double x) { return x > 0 ? 1 : 0; });
}

// The series and everything derived from it that no row range changes: what ResidentKendall holds.
struct KendallOnDevice {
  KendallOnDevice(Device& device, const NodeSeries& series);
  DeviceBuffer<float> z;
  // Ties: the denominators; tiles with a series of many ties take the two-popcount path, listed ties of the others
  // are corrected (kernels/kendall.cl).
  DeviceBuffer<uint8_t> dense;
  DeviceBuffer<int32_t> sparse, tie_off;
  DeviceBuffer<uint16_t> tie_s, tie_t;
  int sparse_count = 0;
  DeviceBuffer<float> dinv;
  // The time pairs s < t in order, sent to the device in chunks of kChunkWords x 32, and a chunk's two sign planes.
  std::vector<uint16_t> all_s, all_t;
  DeviceBuffer<uint16_t> pair_s, pair_t;
  DeviceBuffer<uint32_t> up, nz;
};

KendallOnDevice::KendallOnDevice(Device& device, const NodeSeries& series) {
  const cl_command_queue q = device.queue();
  const auto n = static_cast<int64_t>(series.nodes());
  const int64_t l = series.length;
  z = DeviceBuffer<float>(device, series.z.size(), CL_MEM_READ_ONLY);
  z.write(q, series.z);
  const KendallTies ties = kendall_ties(series, kTile, kSparseTies);
  const double n0 = static_cast<double>(l) * static_cast<double>(l - 1) / 2;
  std::vector<float> dinv_host(ties.tied.size());
  for (size_t k = 0; k < dinv_host.size(); ++k) {
    dinv_host[k] = n0 - ties.tied[k] > 0 ? static_cast<float>(1.0 / std::sqrt(n0 - ties.tied[k])) : 0.0f;
  }
  const auto upload = [&](const auto& host) {
    using T = typename std::decay_t<decltype(host)>::value_type;
    DeviceBuffer<T> buffer(device, std::max<size_t>(host.size(), 1), CL_MEM_READ_ONLY);
    if (!host.empty()) buffer.write(q, host);
    return buffer;
  };
  dense = upload(ties.dense_tile);
  sparse = upload(ties.sparse_nodes);
  tie_off = upload(ties.offsets);
  tie_s = upload(ties.s);
  tie_t = upload(ties.t);
  sparse_count = static_cast<int>(ties.sparse_nodes.size());
  dinv = upload(dinv_host);
  for (int64_t s = 0; s < l; ++s) {
    for (int64_t t = s + 1; t < l; ++t) {
      all_s.push_back(static_cast<uint16_t>(s));
      all_t.push_back(static_cast<uint16_t>(t));
    }
  }
  const int64_t chunk_pairs = int64_t{kChunkWords} * 32;
  pair_s = DeviceBuffer<uint16_t>(device, static_cast<size_t>(chunk_pairs), CL_MEM_READ_ONLY);
  pair_t = DeviceBuffer<uint16_t>(device, static_cast<size_t>(chunk_pairs), CL_MEM_READ_ONLY);
  up = DeviceBuffer<uint32_t>(device, static_cast<size_t>(n) * kChunkWords);
  nz = DeviceBuffer<uint32_t>(device, static_cast<size_t>(n) * kChunkWords);
}

ResidentKendall::ResidentKendall() = default;
ResidentKendall::ResidentKendall(ResidentKendall&&) noexcept = default;
ResidentKendall& ResidentKendall::operator=(ResidentKendall&&) noexcept = default;
ResidentKendall::~ResidentKendall() = default;

void kendall_correlations(Device& device, const NodeSeries& series, const CorrelationThreshold& threshold,
                          const EdgeSink& sink, const TileRowProgress& progress, int64_t band_bytes, TileRows range,
                          ResidentKendall* resident) {
  if (series.normalised) throw std::invalid_argument("Kendall's tau needs the raw series, not normalised ones");
  if (!std::isfinite(threshold.value)) throw std::invalid_argument("correlation threshold must be finite");
  if (series.length > std::numeric_limits<uint16_t>::max()) {
    throw std::invalid_argument(fmt::format("Kendall's tau: {} volumes, at most 65,535", series.length));
  }
  if (resident != nullptr && resident->series != nullptr &&
      (resident->series != &series || resident->device != &device)) {
    throw std::invalid_argument("kendall_correlations: the resident series holds another series or device");
  }
  const auto n = static_cast<int64_t>(series.nodes());
  range = resolve_tile_rows(range, n);
  // The range's rows of nodes [node_first, node_end), on 64-node tile boundaries.
  const int64_t node_first = range.first * kTileRowNodes, node_end = std::min(n, range.end * kTileRowNodes);
  if (node_first >= node_end) return;
  const cl_command_queue q = device.queue();
  const std::vector<std::string> defines{fmt::format("ABSOLUTE={}", threshold.absolute ? 1 : 0)};
  ClKernel signs = device.kernel("kendall.cl", "kendall_signs", defines);
  ClKernel accumulate = device.kernel("kendall.cl", "kendall_accumulate", defines);
  ClKernel finalize = device.kernel("kendall.cl", "kendall_finalize", defines);
  ClKernel correct = device.kernel("kendall.cl", "kendall_correct", defines);
  // The series and a chunk's two sign planes stay on the device whole (not tiled like the correlation's series): refuse
  // what cannot fit, with the figure, before allocating.
  const double resident_bytes = 4.0 * static_cast<double>(n) * static_cast<double>(series.padded + 2 * kChunkWords);
  if (resident_bytes > 0.8 * static_cast<double>(device.info().global_mem_bytes)) {
    throw std::invalid_argument(fmt::format(
        "Kendall's tau: {} nodes x {} volumes need {:.1f} GiB on the device for the series and sign planes, more than "
        "80% of its {:.1f} GiB: use a smaller mask",
        n, series.length, resident_bytes / (1 << 30), static_cast<double>(device.info().global_mem_bytes) / (1 << 30)));
  }
  // This call's, or the one `resident` holds (made by its first call).
  std::unique_ptr<KendallOnDevice> here;
  if (resident == nullptr) {
    here = std::make_unique<KendallOnDevice>(device, series);
  } else if (resident->held == nullptr) {
    resident->held = std::make_unique<KendallOnDevice>(device, series);
    resident->series = &series;
    resident->device = &device;
    ++resident->uploads;
  }
  KendallOnDevice& d = resident != nullptr ? *resident->held : *here;
  const int64_t tiles = (n + kTile - 1) / kTile;
  const auto pairs_total = static_cast<int64_t>(d.all_s.size());
  const int64_t chunk_pairs = int64_t{kChunkWords} * 32;
  // Bands of rows (a multiple of the tile) whose sums fit band_bytes.
  int64_t band = std::max<int64_t>(kTile, band_bytes / (4 * n) / kTile * kTile);
  band = std::min(band, (node_end - node_first + kTile - 1) / kTile * kTile);
  DeviceBuffer<int32_t> s_band(device, static_cast<size_t>(band * n));
  DeviceEdgeList list(device, std::max<int64_t>(n, std::min<int64_t>(band * n / 2, int64_t{16} << 20)));
  const int ni = static_cast<int>(n), lp = static_cast<int>(series.padded);
  for (int64_t b0 = node_first; b0 < node_end; b0 += band) {
    const int64_t rows = std::min(band, node_end - b0);
    s_band.fill(q, 0);
    for (int64_t p0 = 0; p0 < pairs_total; p0 += chunk_pairs) {
      const int64_t pairs = std::min(chunk_pairs, pairs_total - p0);
      d.pair_s.write(q, std::span<const uint16_t>(d.all_s.data() + p0, static_cast<size_t>(pairs)));
      d.pair_t.write(q, std::span<const uint16_t>(d.all_t.data() + p0, static_cast<size_t>(pairs)));
      const int words = static_cast<int>((pairs + 31) / 32);
      // Signs of the nodes from the band's first row on (columns j >= i >= b0).
      set_args(signs, d.z, lp, d.pair_s, d.pair_t, static_cast<int>(pairs), words, static_cast<int>(b0), ni, d.up,
               d.nz);
      launch<2>(q, signs, {static_cast<size_t>(words), static_cast<size_t>(n - b0)}, {64, 1}, {}, EventMode::kNone);
      const int64_t first_tile = b0 / kTile, row_tiles = (rows + kTile - 1) / kTile;
      set_args(accumulate, d.up, d.nz, d.dense, static_cast<int>(pairs), words, ni, static_cast<int>(b0),
               static_cast<int>(rows), static_cast<int>(first_tile), s_band);
      launch<2>(q, accumulate, {static_cast<size_t>(tiles - first_tile) * 16, static_cast<size_t>(row_tiles) * 16},
                {16, 16}, {}, EventMode::kNone);
    }
    if (d.sparse_count > 0) {
      set_args(correct, d.z, lp, d.sparse, d.sparse_count, d.tie_off, d.tie_s, d.tie_t, d.dense, ni,
               static_cast<int>(b0), static_cast<int>(rows), s_band);
      launch<2>(q, correct, {static_cast<size_t>(n), static_cast<size_t>(d.sparse_count)}, {64, 1}, {},
                EventMode::kNone);
    }
    // The band's tau, thresholded, rows at a time; a launch that overflows the list is split (a row holds < n edges).
    std::function<void(int64_t, int64_t)> finish = [&](int64_t row0, int64_t count_rows) {
      list.reset(q);
      set_args(finalize, s_band, d.dinv, ni, static_cast<int>(b0), static_cast<int>(row0), static_cast<int>(count_rows),
               static_cast<float>(threshold.value), list.count(), list.capacity(), list.edges());
      launch<2>(q, finalize, {static_cast<size_t>(n), static_cast<size_t>(count_rows)}, {64, 1}, {}, EventMode::kNone);
      if (list.drain(q, sink) > list.capacity()) {
        finish(row0, count_rows / 2);
        finish(row0 + count_rows / 2, count_rows - count_rows / 2);
      }
    };
    finish(0, rows);
    if (progress) {
      progress((b0 + rows - node_first + kTile - 1) / kTile, (node_end - node_first + kTile - 1) / kTile);
    }
  }
}

}  // namespace rtf
