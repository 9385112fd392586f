// Kendall's tau-b between every pair of nodes on the device (kernels/kendall.cl, docs/algorithms/connectome.md),
// exactly, ties in either series handled as scipy.stats.kendalltau's default (tau-b):
//   tau_b = (n_c - n_d) / sqrt((n0 - n1)(n0 - n2)),  n0 = L(L-1)/2, n1 = sum over x's tie groups t(t-1)/2, n2 for y.
// The time pairs are streamed in chunks as bit planes of signs, and node pairs are accumulated a band of rows at a
// time (band x N integers), so memory never holds the N x L(L-1)/2 signs. A constant series gets no edges. What does
// not depend on the rows may stay on the device between calls (ResidentKendall: the chunks of one pass).
#pragma once

#include <memory>

#include "core/connectome/node_series.hpp"
#include "core/connectome/thresholded_correlation.hpp"

namespace rtf {

struct KendallOnDevice;  // kendall.cpp: the series, its ties and denominators, the time pairs and sign planes

// What kendall_correlations keeps on one device between calls over one series (the chunks of one pass that run on that
// device, core/connectome/connectome_chunks.hpp): the first call uploads the series, counts its ties and denominators,
// lists the time pairs and allocates the sign planes here; later ones reuse them (each call still computes the signs
// of its own rows, and allocates its band's sums and edge list). One per device, used by one thread at a time, for one
// series that must not change while held (a call with another series or device throws std::invalid_argument); freed
// with the object.
struct ResidentKendall {
  ResidentKendall();
  ResidentKendall(ResidentKendall&&) noexcept;
  ResidentKendall& operator=(ResidentKendall&&) noexcept;
  ~ResidentKendall();
  const Device* device = nullptr;  // what it holds, set by the upload
  const NodeSeries* series = nullptr;
  std::unique_ptr<KendallOnDevice> held;
  int64_t uploads = 0;  // uploads of the series into it: 1 once held
};

// `series`: raw (not normalised) node series (node_series(..., normalise = false)); the method field is ignored.
// `band_bytes`: device memory for the band's sums (rows x N x 4 bytes). `rows`: the 128-node tile rows of the upper
// triangle to compute (default all; tau is exact integer counts, so any split gives the same edges bit for bit).
// `resident`, given, keeps the series and what is derived from it on the device for the next call (see
// ResidentKendall); without it each call uploads and derives them. Throws std::invalid_argument for a normalised
// series, L > 65,535, a threshold that is not finite, rows outside the triangle, series too large for the device's
// memory, or a `resident` holding another series or device.
void kendall_correlations(Device& device, const NodeSeries& series, const CorrelationThreshold& threshold,
                          const EdgeSink& sink, const TileRowProgress& progress = {},
                          int64_t band_bytes = int64_t{2} << 30, TileRows rows = {},
                          ResidentKendall* resident = nullptr);

// Marks the nodes whose raw series is constant (D = 0) invalid, as node normalisation does for Pearson, so that the
// density's pair count P excludes them.
void mark_constant_series(NodeSeries& series);

// The tie-corrected denominators D = sqrt(n0 - n1) of each node's raw series (0: constant).
std::vector<double> kendall_denominators(const NodeSeries& series);

}  // namespace rtf
