// Density thresholds: the sample, the candidate pass(es), the exact selection of the k largest.
#include "core/connectome/density_threshold.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include "core/connectome/top_k_edges.hpp"

namespace rtf {

namespace {

constexpr size_t kSampleNodes = 2048;

float metric(const Edge& e, bool absolute) {
  return absolute ? std::abs(e.r) : e.r;
}

// Every pair's r among a seeded random subset of the valid nodes, sorted descending by the metric.
std::vector<float> sample_metrics(const CorrelationPass& pass, const NodeSeries& series, bool absolute, uint64_t seed) {
  std::vector<size_t> valid;
  for (size_t i = 0; i < series.nodes(); ++i) {
    if (series.valid[i]) valid.push_back(i);
  }
  std::mt19937_64 rng(seed);
  std::shuffle(valid.begin(), valid.end(), rng);
  valid.resize(std::min(valid.size(), kSampleNodes));
  NodeSeries sample;
  sample.method = series.method;
  sample.normalised = series.normalised;
  sample.length = series.length;
  sample.padded = series.padded;
  const auto lp = static_cast<size_t>(series.padded);
  for (size_t k = 0; k < valid.size(); ++k) {
    sample.voxels.push_back(series.voxels[valid[k]]);
    sample.valid.push_back(1);
    sample.z.insert(sample.z.end(), series.z.begin() + static_cast<std::ptrdiff_t>(valid[k] * lp),
                    series.z.begin() + static_cast<std::ptrdiff_t>((valid[k] + 1) * lp));
  }
  std::vector<float> values;
  pass(sample, {.value = -2.0, .absolute = false},
       [&](std::span<const Edge> edges) {
         for (const Edge& e : edges) values.push_back(metric(e, absolute));
       },
       {});
  std::sort(values.begin(), values.end(), std::greater<>());
  return values;
}

}  // namespace

double density_memory_estimate(const NodeSeries& series, double density) {
  const auto v = static_cast<double>(std::count(series.valid.begin(), series.valid.end(), 1));
  const double k = density * v * (v - 1) / 2;
  return 1.5 * k * sizeof(Edge) + 2 * k * (sizeof(int32_t) + sizeof(float)) + 8.0 * static_cast<double>(series.nodes());
}

DensityEdges edges_at_density(Device& device, const NodeSeries& series, double density, bool absolute, uint64_t seed,
                              const TileRowProgress& progress, double margin) {
  const CorrelationPass pass = [&device](const NodeSeries& s, const CorrelationThreshold& t, const EdgeSink& sink,
                                         const TileRowProgress& p) { thresholded_correlations(device, s, t, sink, p); };
  return edges_at_density(pass, series, density, absolute, seed, progress, margin);
}

DensityEdges edges_at_density(const CorrelationPass& pass, const NodeSeries& series, double density, bool absolute,
                              uint64_t seed, const TileRowProgress& progress, double margin,
                              const SharedDecision& shared) {
  if (!(density > 0.0 && density <= 1.0)) {
    throw std::invalid_argument(fmt::format("density {}: it lies in (0, 1]", density));
  }
  const auto v = static_cast<int64_t>(std::count(series.valid.begin(), series.valid.end(), 1));
  if (v < 2) throw std::invalid_argument("a density needs at least 2 nodes that are not constant");
  DensityEdges out;
  out.pairs = v * (v - 1) / 2;
  out.requested = std::max<int64_t>(1, std::llround(density * static_cast<double>(out.pairs)));
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  auto start = Clock::now();
  const std::vector<float> sample = sample_metrics(pass, series, absolute, seed);
  out.sample_seconds = seconds_since(start);
  start = Clock::now();
  // The candidate cut: the sample's value at 1.5 times the density (plus a few sample pairs), doubled each retry.
  double fraction = std::min(1.0, margin * density + (margin >= 1.0 ? 8.0 / static_cast<double>(sample.size()) : 0.0));
  // The candidates in pieces, one per call of the sink (a chunk of a spread pass): never one list grown by copying.
  EdgePieces candidates;
  while (true) {
    const auto at = static_cast<size_t>(std::min<double>(static_cast<double>(sample.size()) - 1,
                                                         std::floor(fraction * static_cast<double>(sample.size()))));
    const double cut = fraction >= 1.0 ? -2.0 : static_cast<double>(sample[at]);
    if (out.passes == 0) out.sample_cut = cut;
    candidates.clear();
    pass(
        series, {.value = cut, .absolute = absolute}, [&](std::span<const Edge> edges) { candidates.append(edges); },
        progress);
    ++out.passes;
    const bool enough = candidates.size() >= out.requested || fraction >= 1.0;
    if (shared ? shared(enough) : enough) break;
    fraction = std::min(1.0, fraction * 2.0);
  }
  out.pass_seconds = seconds_since(start);
  out.candidates = candidates.size();
  // No candidates after a pass with a cut of -2 (every pair): a rank other than 0 of a spread pass, nothing to select.
  if (candidates.empty()) return out;
  start = Clock::now();
  // The k-th largest metric among the candidates; every candidate at or above it is kept (ties included).
  TopEdges top = top_k_edges(candidates, std::min<int64_t>(out.requested, out.candidates), absolute);
  candidates.clear();
  out.threshold = top.threshold;
  out.edges = std::move(top.edges);
  out.select_seconds = seconds_since(start);
  return out;
}

}  // namespace rtf
