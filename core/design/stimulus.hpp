// SPM's microtime machinery for event regressors: stimulus functions on a grid of T bins per scan
// (spm_get_ons), their convolution with a basis set (first-order spm_Volterra), and resampling at one bin
// per scan (fMRI_T0, spm_fMRI_design). See docs/algorithms/design.md for the exact indexing.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

namespace rtf {

// SPM's microtime grid: dt = TR / T; bin b (from 0) starts at time (b - 32) dt, so 32 bins precede the
// first scan; scan i is sampled at bin i T + T0 + 31, i.e. at time (i T + T0 - 1) dt.
struct MicrotimeGrid {
  double tr_s = 0.0;
  int64_t n_scans = 0;
  int resolution = 16;  // fMRI_T: bins per scan (SPM's default 16)
  int onset_bin = 8;    // fMRI_T0: 1..T, the bin sampled (SPM12's default 8; 1 samples the scan's start)

  double dt_s() const { return tr_s / resolution; }
  int64_t bins() const { return n_scans * resolution + 32; }

  // Throws std::invalid_argument unless TR > 0, n_scans >= 1, T >= 1, 1 <= T0 <= T and the grid has at
  // most 2^31 bins.
  void validate() const;
};

// Stimulus functions of one trial type, grid.bins() x inputs.cols(): event e covers bins
// [round(onset/dt) + 32, round(onset/dt) + 32 + round(duration/dt)] (at least one bin; bins before the grid are
// clipped to bin 0, bins past its end dropped) with height inputs(e, c). When every duration is 0 the heights
// are divided by dt, so an impulse integrates to its input value (SPM: "sum(u*dt) = number of events").
// Throws std::invalid_argument for mismatched sizes or negative durations.
Eigen::MatrixXd spm_stimulus_functions(const std::vector<double>& onsets_s, const std::vector<double>& durations_s,
                                       const Eigen::MatrixXd& inputs, const MicrotimeGrid& grid);

// Each stimulus column convolved with each basis column (input-major: input 0 with basis 0, 1, ..., then
// input 1 ...), truncated to the grid and sampled at bin i T + T0 + 31 for scans i = 0..n_scans-1.
Eigen::MatrixXd convolve_and_sample(const Eigen::MatrixXd& stimulus, const Eigen::MatrixXd& basis,
                                    const MicrotimeGrid& grid);

}  // namespace rtf
