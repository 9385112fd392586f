// Node series: gathering the mask's voxels, average ranks, centring and normalising in double.
#include "core/connectome/node_series.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "core/device/buffer.hpp"
#include "core/device/launch.hpp"

namespace rtf {

std::vector<double> average_ranks(std::span<const double> x) {
  std::vector<size_t> order(x.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> ranks(x.size());
  for (size_t start = 0; start < order.size();) {
    size_t end = start + 1;
    while (end < order.size() && x[order[end]] == x[order[start]]) ++end;
    const double rank = 0.5 * static_cast<double>(start + 1 + end);  // mean of ranks start+1 .. end
    for (size_t k = start; k < end; ++k) ranks[order[k]] = rank;
    start = end;
  }
  return ranks;
}

namespace {

// Ranks (Spearman), centring and normalising one series in place, in double; false for a constant series.
bool normalise_series(std::vector<double>& x, CorrelationMethod method) {
  if (method == CorrelationMethod::kSpearman) x = average_ranks(x);
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
  double norm = 0.0;
  for (double& v : x) {
    v -= mean;
    norm += v * v;
  }
  norm = std::sqrt(norm);
  if (!(norm > 0.0)) return false;
  for (double& v : x) v /= norm;
  return true;
}

void normalise_on_host(NodeSeries& s) {
  const size_t lp = static_cast<size_t>(s.padded), l = static_cast<size_t>(s.length);
  std::vector<double> x(l);
  for (size_t node = 0; node < s.nodes(); ++node) {
    float* row = &s.z[node * lp];
    std::copy(row, row + l, x.begin());
    const bool ok = normalise_series(x, s.method);
    s.valid[node] = ok ? 1 : 0;
    for (size_t t = 0; t < l; ++t) row[t] = ok ? static_cast<float>(x[t]) : 0.0f;
  }
  s.normalised = true;
}

}  // namespace

int64_t series_memory_budget(const Device& device, int64_t series_bytes) {
  if (series_bytes > 0) return series_bytes;
  const DeviceInfo& info = device.info();
  return static_cast<int64_t>(std::min<uint64_t>(info.max_alloc_bytes, info.global_mem_bytes / 5 * 2));
}

void normalise_on_device(Device& device, NodeSeries& series, int64_t series_bytes) {
  if (series.normalised) return;
  if (series.length > kMaxDeviceSeriesLength) {
    normalise_on_host(series);
    return;
  }
  // Chunks of nodes within the budget (and the largest allocation): one chunk, as one buffer, when all fit.
  const size_t n = series.nodes(), lp = static_cast<size_t>(series.padded), row_bytes = lp * sizeof(float);
  const auto budget = static_cast<uint64_t>(series_memory_budget(device, series_bytes));
  const size_t chunk = std::min<size_t>(n, std::min<uint64_t>(budget, device.info().max_alloc_bytes) / row_bytes);
  if (chunk == 0) {
    throw std::invalid_argument(
        fmt::format("normalise_on_device: a budget of {} bytes holds no series of {} bytes", budget, row_bytes));
  }
  constexpr int kGroup = 64;
  ClKernel kernel = device.kernel(
      "node_normalise.cl", "node_normalise",
      {fmt::format("L={}", series.length), fmt::format("LP={}", series.padded), fmt::format("WG={}", kGroup),
       fmt::format("SPEARMAN={}", series.method == CorrelationMethod::kSpearman ? 1 : 0)});
  const cl_command_queue q = device.queue();
  DeviceBuffer<float> z(device, chunk * lp);
  DeviceBuffer<uint8_t> valid(device, chunk);
  set_args(kernel, z, valid);
  for (size_t first = 0; first < n; first += chunk) {
    const size_t count = std::min(chunk, n - first);
    const std::span<float> rows(series.z.data() + first * lp, count * lp);
    z.write(q, rows);
    launch<1>(q, kernel, {count * kGroup}, {static_cast<size_t>(kGroup)}, {}, EventMode::kNone);
    z.read(q, rows);
    valid.read(q, std::span<uint8_t>(series.valid.data() + first, count));
  }
  series.normalised = true;
}

NodeSeries node_series(const Image& bold, const std::vector<uint8_t>& mask, CorrelationMethod method, bool normalise) {
  const int64_t length = bold.nt();
  if (length < 3) {
    throw std::invalid_argument(fmt::format("a connectome needs a 4D series of at least 3 volumes, not {}", length));
  }
  const auto volume = static_cast<size_t>(bold.header().voxels_per_volume());
  if (mask.size() != volume) {
    throw std::invalid_argument(fmt::format("the mask has {} voxels, the series' volumes {}", mask.size(), volume));
  }
  NodeSeries s;
  s.method = method;
  s.length = length;
  s.padded = (length + 15) / 16 * 16;
  for (size_t v = 0; v < volume; ++v) {
    if (mask[v]) s.voxels.push_back(static_cast<int64_t>(v));
  }
  if (s.voxels.empty()) throw std::invalid_argument("the mask is empty: no nodes");
  const size_t n = s.voxels.size(), lp = static_cast<size_t>(s.padded);
  s.z.assign(n * lp, 0.0f);
  s.valid.assign(n, 1);
  // A blocked transpose (volumes -> node rows): a block of nodes' rows stays in cache while every volume is read.
  constexpr size_t kBlock = 256;
  for (size_t first = 0; first < n; first += kBlock) {
    const size_t last = std::min(n, first + kBlock);
    for (int64_t t = 0; t < length; ++t) {
      const auto vol = bold.volume(t);
      for (size_t node = first; node < last; ++node) {
        const float x = vol[static_cast<size_t>(s.voxels[node])];
        if (!std::isfinite(x)) {
          throw std::invalid_argument(fmt::format("voxel {} has a non-finite value at volume {}", s.voxels[node], t));
        }
        s.z[node * lp + static_cast<size_t>(t)] = x;
      }
    }
  }
  if (normalise) normalise_on_host(s);
  return s;
}

}  // namespace rtf
