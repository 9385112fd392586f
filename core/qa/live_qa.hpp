// LiveQa: the live pipeline's data-quality stage (docs/algorithms/qa.md, "Live"), run on each analysed volume after its
// feedback value has gone out. On the device, from the motion-corrected volume in the ring: the running voxel-wise
// mean, SD and tSNR (Welford, cumulative and over the GLM's sliding window), the slice means with their robust
// z-scores and the global signal, DVARS, 3dToutcount's outlier fraction and 3dTqual's quality index against the ring's
// series (the last `ring` volumes: the ring is what the device holds), and one carpet-plot column; on the host, FD of
// the respiration-filtered motion, FIRMM's usable-data tally and prediction, and the alarms: a threshold crossed
// raises one alarm, and the metric must come back below it before it can raise another. It keeps a row per volume
// and the carpet for the run's files (core/qa/qa_outputs.hpp).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/device/pinned_host.hpp"
#include "core/device/result_arena.hpp"
#include "core/geometry/rigid_transform.hpp"
#include "core/image/image.hpp"
#include "core/qa/motion_filter.hpp"
#include "core/qa/qa_outputs.hpp"
#include "core/qa/slice_zscores.hpp"
#include "core/qa/usable_frames.hpp"
#include "core/ring/device_ring_buffer.hpp"

namespace rtf {

class DeviceVoxelMoments;
class DeviceSortedSeries;
class DeviceQualityIndex;
class DeviceQaVolumePass;
class DeviceMaskedMedian;

struct LiveQaOptions {
  SliceZScoreOptions slices;  // slices.threshold is also the slice alarm's
  FdFilterOptions fd_filter;
  std::vector<double> fd_thresholds{0.2, 0.3, 0.5};
  double target_minutes = 12.5;
  CensorRule censor = CensorRule::kFirmm;
  QaThresholds alarms;
  int64_t carpet_rows = 800;
  int64_t tsnr_map_every = 8;        // a tSNR map (and its median) every so many volumes
  int64_t min_outlier_volumes = 10;  // fewer volumes held: outlier fraction and quality index undefined (a MAD of
                                     // fewer values flags noise: 3 to 10% of clean voxels at 5 volumes)
  int64_t reference_every = 16;      // the quality index's median volume: again at 5, 10, 20 volumes, then this often
  int64_t sliding_window = 0;        // the sliding moments' window (the GLM's); 0: none
};

// Throws std::invalid_argument naming the setting for options that cannot work.
void validate(const LiveQaOptions& options);

struct QaAlarm {
  std::string metric;  // fd_mm, outlier_fraction, slice_z, tsnr_min, usable_minutes
  int64_t volume = 0;
  double value = 0, threshold = 0;
  std::string where;  // "slice 12", ""
};

struct LiveQaSample {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  int64_t volume = 0;
  QaVolumeRow row;                    // global signal, DVARS, outliers, quality index, slices, FD (filtered)
  double tsnr_median = kNaN;          // of the cumulative tSNR in the mask (the latest map's)
  std::vector<UsableTally> usable;    // empty without motion
  std::vector<QaAlarm> alarms;        // raised by this volume
  std::vector<float> carpet;          // this volume's carpet column, z-scored with each voxel's running mean and SD
  std::vector<float> tsnr_map;        // the cumulative tSNR map, on volumes that carry one (empty otherwise)
  double sliding_tsnr_median = kNaN;  // of the tSNR over the sliding window (with the map's cadence)
  // CNR of the design's published contrast (filled by the pipeline, which owns the GLM; with the tSNR map's cadence):
  // per voxel c'beta / residual SD of the cumulative GLM, and its 95th percentile in the mask (the newest known).
  std::vector<float> cnr_map;
  double cnr_p95 = kNaN;
  // What the sample is measured against (for its readers: the alarms' thresholds, the carpet's grey-matter split).
  QaThresholds thresholds;
  double slice_threshold = 0, target_minutes = 0;
  int64_t carpet_split = 0;
};

class LiveQa {
 public:
  // `mask`: the brain mask (one byte per voxel of `grid`, non-zero inside); `grey`: optional, same size: grey matter
  // (the carpet's rows start with it). Throws std::invalid_argument for a mask of another size or with no voxel.
  LiveQa(Device& device, const ImageHeader& grid, std::vector<uint8_t> mask, const LiveQaOptions& options,
         int64_t ring_capacity, double tr_s, std::span<const uint8_t> grey = {});
  ~LiveQa();
  LiveQa(const LiveQa&) = delete;
  LiveQa& operator=(const LiveQa&) = delete;

  // Volume `index`, the newest of `ring` (motion-corrected); `motion`: its parameters (null: no motion stage).
  LiveQaSample update(const DeviceRingBuffer& ring, int64_t index, const RigidParams* motion);

  // The run so far for its files (qa.tsv, qa.json, maps, report): reads the maps back and, from the volumes the ring
  // still holds, the series measures (gcor, standardised DVARS).
  QaRun run_record(const DeviceRingBuffer& ring, const std::string& title);

  int64_t carpet_rows() const;
  // Volumes whose quality index needed the slower ranking (a bucket past its capacity: core/qa/bucket_ranks.hpp).
  int64_t quality_reranked() const;
  int64_t carpet_split() const { return carpet_split_; }
  const std::vector<uint8_t>& mask() const { return mask_; }
  const LiveQaOptions& options() const { return options_; }

 private:
  void raise(bool over, int metric, int64_t volume, double value, double threshold, std::string where,
             std::vector<QaAlarm>& out, const char* name);

  Device& device_;
  ImageHeader grid_;
  std::vector<uint8_t> mask_;
  int64_t mask_voxels_ = 0;
  LiveQaOptions options_;
  int64_t ring_capacity_;
  double tr_s_;
  int64_t voxels_;
  std::unique_ptr<ResultArena> arena_;  // the small per-TR results of the measures below, read with one command
  std::unique_ptr<DeviceVoxelMoments> cumulative_, sliding_;
  std::unique_ptr<DeviceSortedSeries> sorted_;  // the ring's series per voxel, sorted: outliers, median volume
  std::unique_ptr<DeviceQualityIndex> quality_;
  std::unique_ptr<DeviceQaVolumePass> pass_;  // moments, slice means, DVARS, carpet column: one launch
  std::unique_ptr<DeviceMaskedMedian> tsnr_median_of_map_, sliding_median_of_map_;  // of the tSNR maps in the mask
  PinnedHost<float> tsnr_host_;  // the cumulative tSNR map's read destination
  int64_t carpet_split_ = 0;
  DeviceBuffer<float> median_;
  SliceZScores slice_z_;
  std::optional<MotionFilter> motion_filter_;
  std::optional<RigidParams> previous_motion_;
  std::vector<double> fd_;
  std::vector<QaVolumeRow> rows_;
  std::vector<std::vector<float>> carpet_columns_;  // raw values, one column a volume
  std::vector<double> carpet_mean_, carpet_m2_;     // each carpet voxel's running moments (host, double)
  int64_t first_index_ = -1, reference_volumes_ = 0, last_reference_ = -1;
  int64_t synced_ = -1;      // the newest volume the sorted series hold (-1: none)
  int64_t last_index_ = -1;  // the volume analysed before (DVARS compares with it)
  double tsnr_median_ = LiveQaSample::kNaN, sliding_tsnr_median_ = LiveQaSample::kNaN;
  std::array<bool, 5> over_{};  // per alarm metric: above its threshold now
};

}  // namespace rtf
