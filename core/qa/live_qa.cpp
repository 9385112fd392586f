// LiveQa: each volume copied out of the ring once, then the device measures on that copy (and the ring's series for
// the outliers and the median volume), the host arithmetic on their few numbers, the alarms.
#include "core/qa/live_qa.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/device/cl_error.hpp"
#include "core/qa/carpet_column.hpp"
#include "core/qa/image_quality.hpp"
#include "core/qa/masked_median.hpp"
#include "core/qa/quality_index.hpp"
#include "core/qa/sorted_series.hpp"
#include "core/qa/volume_pass.hpp"
#include "core/qa/voxel_moments.hpp"

namespace rtf {

namespace {

enum AlarmMetric { kFd, kOutliers, kSlice, kTsnr, kUsable };

}  // namespace

void validate(const LiveQaOptions& o) {
  const auto fail = [](const std::string& what) { throw std::invalid_argument("[qa] " + what); };
  (void)SliceZScores(o.slices);
  for (const double t : o.fd_thresholds) {
    if (!(t > 0) || !std::isfinite(t)) fail(fmt::format("fd_thresholds must be numbers > 0 mm (got {})", t));
  }
  if (o.fd_thresholds.empty()) fail("fd_thresholds needs at least one threshold");
  if (!(o.target_minutes > 0) || !std::isfinite(o.target_minutes)) {
    fail(fmt::format("target_minutes must be > 0 (got {})", o.target_minutes));
  }
  if (!(o.alarms.fd_mm >= 0) || !std::isfinite(o.alarms.fd_mm)) {
    fail(fmt::format("alarm_fd_mm must be >= 0 mm, 0 for no alarm (got {})", o.alarms.fd_mm));
  }
  if (!(o.alarms.outlier_fraction >= 0 && o.alarms.outlier_fraction <= 1)) {
    fail(fmt::format("alarm_outlier_fraction must be in [0, 1], 0 for no alarm (got {})", o.alarms.outlier_fraction));
  }
  if (!(o.alarms.tsnr_min >= 0) || !std::isfinite(o.alarms.tsnr_min)) {
    fail(fmt::format("alarm_tsnr_min must be >= 0, 0 for no alarm (got {})", o.alarms.tsnr_min));
  }
  if (o.carpet_rows < 0 || o.carpet_rows > 100000)
    fail(fmt::format("carpet_rows must be 0..100000 (got {})", o.carpet_rows));
  if (o.tsnr_map_every < 1) fail(fmt::format("tsnr_map_every must be >= 1 (got {})", o.tsnr_map_every));
  if (o.min_outlier_volumes < 3) fail(fmt::format("min_outlier_volumes must be >= 3 (got {})", o.min_outlier_volumes));
  if (o.reference_every < 1) fail(fmt::format("reference_every must be >= 1 (got {})", o.reference_every));
}

LiveQa::LiveQa(Device& device, const ImageHeader& grid, std::vector<uint8_t> mask, const LiveQaOptions& options,
               int64_t ring_capacity, double tr_s, std::span<const uint8_t> grey)
    : device_(device),
      grid_(grid),
      mask_(std::move(mask)),
      options_(options),
      ring_capacity_(ring_capacity),
      tr_s_(tr_s),
      voxels_(grid.voxels_per_volume()),
      median_(device, static_cast<size_t>(std::max<int64_t>(grid.voxels_per_volume(), 1))),
      slice_z_(options.slices) {
  validate(options_);
  if (static_cast<int64_t>(mask_.size()) != voxels_) {
    throw std::invalid_argument(fmt::format("live QA: a mask of {} voxels for a grid of {}", mask_.size(), voxels_));
  }
  mask_voxels_ = std::count_if(mask_.begin(), mask_.end(), [](uint8_t m) { return m != 0; });
  if (mask_voxels_ == 0) throw std::invalid_argument("live QA: the mask has no voxel inside");
  cumulative_ = std::make_unique<DeviceVoxelMoments>(device, voxels_);
  if (options_.sliding_window > 1) sliding_ = std::make_unique<DeviceVoxelMoments>(device, voxels_);
  const CarpetVoxels chosen = carpet_voxels(mask_, options_.carpet_rows, grey);
  // The per-TR results of the volume pass, the outlier count and the quality index: one read a TR.
  arena_ = std::make_unique<ResultArena>(
      device, DeviceQaVolumePass::result_bytes(grid.dims, chosen.indices.size()) + 2 * sizeof(int) +
                  DeviceQualityIndex::live_result_bytes(mask_voxels_) + 3 * ResultArena::kAlignmentSlack);
  sorted_ = std::make_unique<DeviceSortedSeries>(device, mask_, static_cast<int>(ring_capacity_),
                                                 DeviceSortedSeries::Kernel::kAuto, DeviceSortedSeries::kDefaultLanes,
                                                 arena_.get());
  tsnr_median_of_map_ = std::make_unique<DeviceMaskedMedian>(device, mask_);
  if (sliding_) sliding_median_of_map_ = std::make_unique<DeviceMaskedMedian>(device, mask_);
  tsnr_host_ = PinnedHost<float>(device, static_cast<size_t>(voxels_));
  quality_ = std::make_unique<DeviceQualityIndex>(device, mask_, 0, 8, arena_.get());  // one row: a volume a time
  carpet_split_ = chosen.split;
  pass_ = std::make_unique<DeviceQaVolumePass>(device, grid.dims, mask_, chosen.indices, arena_.get());
  carpet_mean_.assign(chosen.indices.size(), 0.0);
  carpet_m2_.assign(chosen.indices.size(), 0.0);
  median_.fill(device.queue(), 0.0f);
  if (options_.fd_filter.kind != FdFilterKind::kNone) motion_filter_.emplace(options_.fd_filter, tr_s_);
}

LiveQa::~LiveQa() = default;

int64_t LiveQa::carpet_rows() const {
  return pass_->carpet_rows();
}

int64_t LiveQa::quality_reranked() const {
  return quality_->reranked();
}

void LiveQa::raise(bool over, int metric, int64_t volume, double value, double threshold, std::string where,
                   std::vector<QaAlarm>& out, const char* name) {
  bool& was = over_[static_cast<size_t>(metric)];
  if (over && !was) out.push_back({name, volume, value, threshold, std::move(where)});
  was = over;
}

LiveQaSample LiveQa::update(const DeviceRingBuffer& ring, int64_t index, const RigidParams* motion) {
  if (!ring.contains(index)) throw std::invalid_argument(fmt::format("live QA: volume {} is not in the ring", index));
  if (first_index_ < 0) first_index_ = index;
  LiveQaSample s;
  s.volume = index;
  QaVolumeRow& row = s.row;
  row.volume = index;
  // The per-voxel measures in one pass over the ring's slot: the moments, cumulative and over the sliding window (the
  // volume leaving it is still in the ring), the slice means, DVARS against the volume analysed before (while the ring
  // holds it), the carpet column. Every measure is enqueued first and the host waits once (each wait costs tens of
  // microseconds on a GPU).
  const auto slot = [&](int64_t i) { return static_cast<int>(ring.slot_of(i)); };
  const int previous = last_index_ >= 0 && last_index_ < index && ring.contains(last_index_) ? slot(last_index_) : -1;
  int leaving = -1;
  if (sliding_) {
    const int64_t leaving_index = index - options_.sliding_window;
    if (sliding_->count() >= options_.sliding_window && ring.contains(leaving_index)) leaving = slot(leaving_index);
  }
  pass_->enqueue(ring.data(), slot(index), previous, *cumulative_, sliding_.get(), leaving);
  last_index_ = index;

  // Outliers and the quality index against the volumes the ring holds.
  const int64_t held = std::min<int64_t>(index - first_index_ + 1, ring_capacity_);
  const bool against_ring = held >= std::min(options_.min_outlier_volumes, ring_capacity_);
  // The sorted series take every volume since the last one they took (all that the ring holds after a gap), the
  // newest counting its outliers.
  if (synced_ < 0 || index <= synced_ || index - synced_ > ring_capacity_) {
    sorted_->clear();
    synced_ = index - ring_capacity_;
  }
  for (int64_t i = synced_ + 1; i <= index; ++i) {
    if (ring.contains(i))
      sorted_->enqueue_replace(ring.data(), static_cast<int>(ring.slot_of(i)), i == index && against_ring);
  }
  synced_ = index;
  if (against_ring) {
    const bool refresh =
        last_reference_ < 0 || held == 2 * reference_volumes_ ||
        (reference_volumes_ >= options_.reference_every / 2 && index - last_reference_ >= options_.reference_every);
    if (refresh) {  // waits for the device (every reference_every volumes)
      sorted_->enqueue_medians(median_);
      quality_->set_reference(median_);
      reference_volumes_ = held;
      last_reference_ = index;
    }
    quality_->enqueue_quality_of_slot(ring.data(), static_cast<int>(ring.slot_of(index)));
  }
  // tSNR: the map every tsnr_map_every volumes (and the second, the first with an SD), its median and the sliding
  // window's taken on the device; only the cumulative map crosses to the host (for the viewer).
  const bool with_map =
      cumulative_->count() >= 2 && (cumulative_->count() == 2 || (index - first_index_) % options_.tsnr_map_every == 0);
  const bool with_sliding_map = with_map && sliding_ && sliding_->count() >= 2;
  if (with_map) {
    cumulative_->compute_maps();
    tsnr_median_of_map_->enqueue(cumulative_->tsnr());
    cumulative_->tsnr().read_async(device_.queue(), tsnr_host_.span());
  }
  if (with_sliding_map) {
    sliding_->compute_maps();
    sliding_median_of_map_->enqueue(sliding_->tsnr());
  }
  arena_->enqueue_read();
  RTF_CL_CHECK(clFinish(device_.queue()));

  QaVolumeMeasures measures = pass_->result();
  row.global = measures.global;
  row.slices = slice_z_.next(measures.slice_means);
  row.dvars = measures.dvars;
  if (against_ring) {
    row.outliers = sorted_->outliers_result();
    row.outlier_fraction = static_cast<double>(row.outliers) / static_cast<double>(mask_voxels_);
    row.quality = quality_->quality_result();
  }

  // The carpet column, z-scored with each voxel's running moments (Welford in double on the host).
  std::vector<float> raw = std::move(measures.carpet);
  const auto n = static_cast<double>(cumulative_->count());
  s.carpet.resize(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const double d = raw[i] - carpet_mean_[i];
    carpet_mean_[i] += d / n;
    carpet_m2_[i] += d * (raw[i] - carpet_mean_[i]);
    const double sd = n > 1 ? std::sqrt(carpet_m2_[i] / n) : 0.0;
    s.carpet[i] = sd > 0 ? static_cast<float>((raw[i] - carpet_mean_[i]) / sd) : 0.0f;
  }
  carpet_columns_.push_back(std::move(raw));

  if (with_map) {
    s.tsnr_map.assign(tsnr_host_.span().begin(), tsnr_host_.span().end());
    tsnr_median_ = tsnr_median_of_map_->result();
  }
  if (with_sliding_map) sliding_tsnr_median_ = sliding_median_of_map_->result();
  s.tsnr_median = tsnr_median_;
  s.sliding_tsnr_median = sliding_tsnr_median_;
  s.thresholds = options_.alarms;
  s.slice_threshold = options_.slices.threshold;
  s.target_minutes = options_.target_minutes;
  s.carpet_split = carpet_split_;

  // FD of the filtered motion and FIRMM's tally.
  if (motion != nullptr) {
    const RigidParams p = motion_filter_ ? motion_filter_->next(*motion) : *motion;
    row.fd = previous_motion_ ? framewise_displacement(*previous_motion_, p, 50.0) : 0.0;
    previous_motion_ = p;
    fd_.push_back(row.fd);
    if (tr_s_ > 0) {
      s.usable = usable_tally(fd_, tr_s_, options_.fd_thresholds, options_.target_minutes, options_.censor);
    }
  }

  // Alarms: once per crossing.
  const QaThresholds& a = options_.alarms;
  if (a.fd_mm > 0 && std::isfinite(row.fd)) {
    raise(row.fd > a.fd_mm, kFd, index, row.fd, a.fd_mm, "", s.alarms, "fd_mm");
  }
  if (a.outlier_fraction > 0 && std::isfinite(row.outlier_fraction)) {
    raise(row.outlier_fraction > a.outlier_fraction, kOutliers, index, row.outlier_fraction, a.outlier_fraction, "",
          s.alarms, "outlier_fraction");
  }
  if (row.slices.worst_slice >= 0) {
    raise(!row.slices.flagged.empty(), kSlice, index, row.slices.worst_z, options_.slices.threshold,
          fmt::format("slice {}", row.slices.worst_slice), s.alarms, "slice_z");
  }
  if (a.tsnr_min > 0 && std::isfinite(tsnr_median_) && cumulative_->count() >= a.tsnr_min_volumes) {
    raise(tsnr_median_ < a.tsnr_min, kTsnr, index, tsnr_median_, a.tsnr_min, "", s.alarms, "tsnr_min");
  }
  if (a.usable_target && !s.usable.empty()) {
    raise(s.usable.front().minutes >= options_.target_minutes, kUsable, index, s.usable.front().minutes,
          options_.target_minutes, fmt::format("FD < {} mm", s.usable.front().threshold_mm), s.alarms,
          "usable_minutes");
  }
  rows_.push_back(row);
  return s;
}

QaRun LiveQa::run_record(const DeviceRingBuffer& ring, const std::string& title) {
  QaRun run;
  run.title = title;
  run.grid = grid_;
  run.tr_s = tr_s_;
  run.rows = rows_;
  run.with_fd = !fd_.empty();
  run.mask = mask_;
  run.slice_threshold = options_.slices.threshold;
  run.fd_thresholds = options_.fd_thresholds;
  run.target_minutes = options_.target_minutes;
  run.fd_filter = options_.fd_filter.kind == FdFilterKind::kNone    ? "none"
                  : options_.fd_filter.kind == FdFilterKind::kNotch ? "notch"
                                                                    : "lowpass";
  run.censor_rule = options_.censor;
  run.censor = options_.censor == CensorRule::kFirmm ? "firmm" : "power2014";
  run.thresholds = options_.alarms;
  if (cumulative_->count() > 0) run.maps = cumulative_->read_maps();
  if (!run.maps.mean.empty()) run.image = image_quality(run.maps.mean, mask_, grid_.dims, grid_.voxel_mm);
  // The series measures over the volumes the ring still holds that were analysed, in time order.
  std::vector<int64_t> held;
  for (const QaVolumeRow& r : rows_) {
    if (ring.contains(r.volume)) held.push_back(r.volume);
  }
  if (held.size() >= 2) {
    std::vector<float> series(held.size() * static_cast<size_t>(voxels_));
    for (size_t t = 0; t < held.size(); ++t) {
      ring.data().read(device_.queue(),
                       std::span<float>(series).subspan(t * static_cast<size_t>(voxels_), static_cast<size_t>(voxels_)),
                       static_cast<size_t>(ring.slot_of(held[t]) * voxels_));
    }
    const SeriesQuality sq = series_quality(series, static_cast<int64_t>(held.size()), voxels_, mask_);
    run.gcor = sq.gcor;
    const size_t offset = run.rows.size() - held.size();  // the held volumes are the last rows
    for (size_t t = 0; t < held.size(); ++t) {
      run.rows[offset + t].dvars_std = sq.dvars_std[t];
      run.rows[offset + t].dvars_vstd = sq.dvars_vstd[t];
    }
  }
  run.carpet_rows = pass_->carpet_rows();
  run.carpet_split = carpet_split_;
  run.carpet.resize(static_cast<size_t>(run.carpet_rows) * carpet_columns_.size());
  for (size_t t = 0; t < carpet_columns_.size(); ++t) {
    for (size_t r = 0; r < static_cast<size_t>(run.carpet_rows); ++r) {
      run.carpet[r * carpet_columns_.size() + t] = carpet_columns_[t][r];
    }
  }
  run.extra["live"] = {{"outliers_and_quality_index_over_last_volumes", ring_capacity_},
                       {"dvars_std_and_gcor_over_last_volumes", held.size()}};
  run.notes.emplace_back("Windowed",
                         fmt::format("outlier fraction and quality index of each volume against the last {} "
                                     "volumes (the device ring); standardised DVARS and GCOR over the last "
                                     "{} volumes; `rtfmri qa SESSION_DIR` gives them over the whole run",
                                     ring_capacity_, held.size()));
  return run;
}

}  // namespace rtf
