// Thresholding a connectome by density (docs/algorithms/connectome.md): keep the k = round(D x P) pairs with the
// largest r (or |r|), P the pairs of valid nodes. The cut is exact, not a histogram bin: a sample of the pairs (every
// pair among a seeded random subset of about 2,000 nodes) estimates r at density 1.5 D; one pass over all pairs keeps
// the candidates above it (a bounded list: ~1.5 k edges), and the host selects the k largest among them. Should the
// estimate fall short (fewer than k candidates), the pass is repeated with a lower cut. Pairs tied with the k-th
// value are all kept, so the density can exceed D by ties.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/connectome/thresholded_correlation.hpp"
#include "core/util/host_array.hpp"

namespace rtf {

struct DensityEdges {
  HostArray<Edge> edges;    // in the candidates' order (sorted by (i, j) for a spread pass)
  double threshold = 0.0;   // the k-th largest r (|r| with absolute): every kept edge is at or above it
  int64_t pairs = 0;        // P, pairs of valid nodes
  int64_t requested = 0;    // k
  int passes = 0;           // passes over all pairs (1 unless the sample's estimate fell short)
  double sample_cut = 0.0;  // the first pass's candidate cut
  int64_t candidates = 0;   // pairs the last pass kept
  double sample_seconds = 0.0, pass_seconds = 0.0, select_seconds = 0.0;  // where the time went
};

// Host memory the candidates need (bytes), for the caller's refusal before computing: ~1.5 k edges, their CSR.
double density_memory_estimate(const NodeSeries& series, double density);

// One pass over every pair of `series` that streams the pairs passing a threshold: thresholded_correlations (Pearson,
// Spearman) or kendall_correlations (tau-b), bound to a device. Called on the node sample, then on all nodes.
using CorrelationPass = std::function<void(const NodeSeries& series, const CorrelationThreshold& threshold,
                                           const EdgeSink& sink, const TileRowProgress& progress)>;

// A pass spread over MPI ranks (core/connectome/connectome_chunks.hpp) streams the candidates on rank 0 only: the
// decision to repeat the pass is rank 0's, handed to every rank by `shared` (Ranks::broadcast) so that all take the
// same path; the other ranks' result has no edges. Empty: a job of one process.
using SharedDecision = std::function<bool(bool)>;

// `margin`: the candidate cut is the sample's value at margin x density (tests shrink it to force a repeated pass).
// Throws std::invalid_argument for a density outside (0, 1] or fewer than 2 valid nodes.
DensityEdges edges_at_density(const CorrelationPass& pass, const NodeSeries& series, double density, bool absolute,
                              uint64_t seed = 1, const TileRowProgress& progress = {}, double margin = 1.5,
                              const SharedDecision& shared = {});

// The same with thresholded_correlations on `device` (normalised series: Pearson, Spearman).
DensityEdges edges_at_density(Device& device, const NodeSeries& series, double density, bool absolute,
                              uint64_t seed = 1, const TileRowProgress& progress = {}, double margin = 1.5);

}  // namespace rtf
