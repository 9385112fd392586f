// RoiCorrelation: the ROI x ROI correlation matrix of an atlas every TR, over a sliding window and cumulatively, with
// Fisher's z. The ROI means of each volume are computed on the device (RoiTimeseries) and read back (R floats, needed
// on the host anyway for the neurofeedback value); the R x R matrices are computed on the host in double precision:
// for R = 116 and W = 100 a window matrix is ~0.7 M multiply-adds (~0.1-0.3 ms on one core) and a cumulative update
// R^2/2 = 7 k, which a device launch and a read-back of the R x R matrix would not beat, and double precision makes
// the cumulative sums exact enough without compensation. docs/algorithms/connectivity.md.
//
// Regions with no voxel on the grid (RoiSet::missing) have NaN means and NaN rows and columns. A volume in which a
// present region has no finite voxel (e.g. an all-NaN volume) is left out of both estimates (counted in
// skipped_volumes()); it still appears, with its NaNs, in window_means().
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <span>
#include <vector>

#include "core/connectivity/atlas.hpp"
#include "core/connectivity/roi_timeseries.hpp"
#include "core/connectivity/window.hpp"
#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/device/kernel_profile.hpp"
#include "core/image/image.hpp"

namespace rtf {

class RoiCorrelation {
 public:
  // `rois`: the atlas on the EPI grid (rois_on_grid); `slots`: volumes the data buffer holds (a ring's capacity, a
  // series' length). Throws std::invalid_argument for an empty ROI set, a window < 2 or larger than `slots`, or neither
  // estimate enabled. Everything is allocated here.
  RoiCorrelation(Device& device, const RoiSet& rois, int64_t slots, ConnectivityOptions options = {});
  // Waits for a read still in flight (enqueue() without finish(), e.g. after an exception), which writes into
  // this object's staging memory.
  ~RoiCorrelation();
  RoiCorrelation(const RoiCorrelation&) = delete;
  RoiCorrelation& operator=(const RoiCorrelation&) = delete;

  // One TR, with the arguments of SeedCorrelation::update. Computes the newest volume's ROI means (and those of any
  // window slot not seen yet) on the device, reads them back (blocking: this waits for the queue), then the matrices.
  void update(const DeviceBuffer<float>& data, std::span<const int64_t> slots_in_time_order, int64_t newest_slot,
              const ClEvent* after = nullptr);

  // update() in two halves, so that the host work overlaps other device work: enqueue() launches the ROI means and
  // their non-blocking read-back; finish() waits for it and computes the matrices on the host. Call them alternately
  // (std::logic_error otherwise); between them, enqueue the next stages (e.g. SeedCorrelation::update).
  void enqueue(const DeviceBuffer<float>& data, std::span<const int64_t> slots_in_time_order, int64_t newest_slot,
               const ClEvent* after = nullptr);
  void finish();

  // Starts the cumulative sums afresh (a new run).
  void reset_cumulative();

  // ROI mean time courses: the newest volume's means (R values; NaN for a missing region), and the last sliding
  // window's, one row per volume, oldest first (R columns).
  std::span<const double> newest_means() const { return newest_; }
  Eigen::MatrixXd::ConstRowsBlockXpr window_means() const { return window_means_.topRows(window_rows_); }

  // R x R matrices after the last update (symmetric; diagonal r = 1 and z = fisher_z(1) for a region that varies).
  const Eigen::MatrixXd& sliding_r() const { return sliding_r_; }
  const Eigen::MatrixXd& sliding_z() const { return sliding_z_; }
  const Eigen::MatrixXd& cumulative_r() const { return cumulative_r_; }
  const Eigen::MatrixXd& cumulative_z() const { return cumulative_z_; }

  int64_t sliding_volumes() const { return sliding_used_; }  // volumes behind the last sliding matrix
  int64_t cumulative_volumes() const { return cumulative_n_; }
  int64_t skipped_volumes() const { return skipped_; }  // left out of the cumulative sums (non-finite means)
  double last_host_ms() const { return host_ms_; }      // host time of the last update's matrices
  double last_read_ms() const { return read_ms_; }      // time finish() waited for the means to arrive
  const RoiSet& rois() const { return rois_; }
  const RoiTimeseries& timeseries() const { return means_; }
  const ConnectivityOptions& options() const { return options_; }

  // Attaches a per-kernel device-time breakdown (benchmarks); null detaches. The caller collects it.
  void set_profile(KernelProfile* profile);

 private:
  void compute_sliding(std::span<const int64_t> window);
  void add_cumulative(std::span<const double> row);
  // Writes r and z of the present regions from the covariance-like matrix c (lower triangle, present x present).
  void write_matrices(const Eigen::MatrixXd& c, bool defined, Eigen::MatrixXd& r, Eigen::MatrixXd& z);

  Device& device_;
  RoiSet rois_;
  int64_t slots_;
  ConnectivityOptions options_;
  RoiTimeseries means_;
  std::vector<int32_t> present_;     // indices of the regions with voxels
  std::vector<uint8_t> slot_valid_;  // per slot: its means are on the host
  std::vector<uint8_t> seen_;        // checked_window scratch
  std::vector<double> host_means_;   // [slot][R]
  std::vector<cl_float2> staging_;   // [W][R] (hi, lo) means read back by enqueue()
  std::vector<int64_t> window_;      // the pending update's window slots
  std::vector<int64_t> fetched_;     // the slots whose means the pending update reads back
  ClEvent read_done_;
  int64_t pending_newest_ = -1;
  bool pending_ = false;
  Eigen::ArrayXd inv_sd_;         // [P] 1 / sqrt of the diagonal
  Eigen::ArrayXd tri_r_, tri_z_;  // packed strict lower triangles
  std::vector<double> newest_;    // R
  Eigen::MatrixXd window_means_;  // [W][R], the top window_rows_ rows in use
  int64_t window_rows_ = 0;
  Eigen::MatrixXd centred_;  // [W][P]: the window's valid rows, present regions, centred
  Eigen::MatrixXd cov_;      // [P][P], lower triangle
  Eigen::MatrixXd sliding_r_, sliding_z_, cumulative_r_, cumulative_z_;
  int64_t sliding_used_ = 0;
  Eigen::VectorXd reference_, sum_, deviation_;  // [P]: the shift (first valid row), sum of deviations, scratch
  Eigen::MatrixXd cross_;                        // [P][P], lower triangle: sum of deviation products
  int64_t cumulative_n_ = 0;
  int64_t skipped_ = 0;
  double host_ms_ = 0.0;
  double read_ms_ = 0.0;
  KernelProfile* profile_ = nullptr;
};

// Offline use of the same kernels: the whole series in one device buffer (volume t in slot t), update() per volume in
// order. Returns every volume's ROI means ([T][R]) and the matrices after the last volume.
struct RoiCorrelationSeries {
  Eigen::MatrixXd means;
  Eigen::MatrixXd sliding_r, sliding_z, cumulative_r, cumulative_z;
};
RoiCorrelationSeries roi_correlation_series(Device& device, const Image& bold, const RoiSet& rois,
                                            ConnectivityOptions options = {});

}  // namespace rtf
