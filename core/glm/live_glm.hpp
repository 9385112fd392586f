// The GLMs that run every TR on the volumes of a device ring (docs/algorithms/glm.md):
// - CumulativeGlm: all volumes of the run so far. Each TR adds the new volume to compensated accumulators (no
//   subtraction ever) and X'X in double on the host, then solves. At the last volume it equals the offline GLM.
// - SlidingGlm: the last W volumes. Each TR recomputes the window's sums from the ring (no add-then-subtract drift)
//   with the run design's task and confound columns and, instead of its drift and constant, Legendre polynomials of
//   order 0..drift_order over the window.
// Both take the full-run design (core/design) and contrasts over its columns, optional AR(1) prewhitening with a
// fixed coefficient, and a mask. Volumes skipped by the live stage are simply absent from the fit.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/design/design_matrix.hpp"
#include "core/glm/device_glm.hpp"
#include "core/ring/device_ring_buffer.hpp"

namespace rtf {

struct LiveGlmSpec {
  DesignMatrix design;                 // the whole run: one row per volume index
  std::vector<GlmContrast> contrasts;  // over design.columns (t: one row, F: several)
  double ar1 = 0.0;                    // AR(1) coefficient for prewhitening; 0: ordinary least squares
  std::optional<std::vector<uint8_t>> mask;
  // Cumulative GLM with a DCT drift: TR and cutoff of the design's drift columns (kind kDrift, lowest frequency
  // first). After n volumes only the first floor(2 n TR / cutoff) of them are fitted, as many as SPM's DCT set for
  // a run of n volumes would have; all of them at the run's end. Early in a run the full run's low-frequency cosines
  // are nearly collinear over the volumes seen so far; leaving them out keeps the fit well conditioned.
  // 0: every column from the start.
  double tr_s = 0.0;
  double progressive_highpass_cutoff_s = 0.0;
};

class CumulativeGlm {
 public:
  CumulativeGlm(Device& device, int64_t voxels, LiveGlmSpec spec);

  // Sets the design's confound columns (kind kConfound, in order) of row `index`, e.g. the motion parameters the
  // live motion stage just estimated for that volume. Call before update(index). Throws std::invalid_argument for
  // the wrong number of values.
  void set_confounds(int64_t index, std::span<const double> values);

  // Adds volume `index` (held by `ring`, after its upload has completed) and solves. Indices must increase; one
  // beyond the design's rows throws std::out_of_range. Returns the solve's event.
  ClEvent update(const DeviceRingBuffer& ring, int64_t index);

  int64_t volumes() const { return count_; }
  const GlmModel& model() const { return model_; }
  const DeviceGlm& glm() const { return glm_; }
  DeviceGlm& glm() { return glm_; }

 private:
  LiveGlmSpec spec_;
  DeviceGlm glm_;
  Eigen::MatrixXd xtx_;
  std::vector<bool> active_;
  int64_t count_ = 0;
  int64_t last_index_ = -1;
  GlmModel model_;
};

class SlidingGlm {
 public:
  // `window` W >= 2; the ring must hold at least W volumes.
  SlidingGlm(Device& device, int64_t voxels, LiveGlmSpec spec, int64_t window, int drift_order = 1);

  // As CumulativeGlm::set_confounds.
  void set_confounds(int64_t index, std::span<const double> values);

  // Fits the volumes newest-W+1 .. newest that `ring` holds. Returns the solve's event.
  ClEvent update(const DeviceRingBuffer& ring, int64_t newest);

  // The window design's column names: the run design's task and confound columns, then "window_poly_0".."_K".
  const std::vector<std::string>& column_names() const { return names_; }
  int64_t window() const { return window_; }
  const GlmModel& model() const { return model_; }
  const DeviceGlm& glm() const { return glm_; }
  DeviceGlm& glm() { return glm_; }

 private:
  LiveGlmSpec spec_;
  int64_t window_;
  int drift_order_;
  std::vector<Eigen::Index> kept_columns_;  // of the run design
  std::vector<std::string> names_;
  DeviceGlm glm_;
  GlmModel model_;
  std::vector<int64_t> slots_, prev_;
};

// Writes `values` into the confound columns of row `index` of `design` (shared by both GLMs).
void set_design_confounds(DesignMatrix& design, int64_t index, std::span<const double> values);

// Contrasts over the run design mapped onto the sliding window's columns (kept columns, then the window's
// polynomials, which no contrast may weigh). Throws std::invalid_argument naming a contrast that weighs a drift or
// constant column.
std::vector<GlmContrast> window_contrasts(const DesignMatrix& design, const std::vector<GlmContrast>& contrasts,
                                          const std::vector<Eigen::Index>& kept_columns, int drift_order);

}  // namespace rtf
