// FeedbackRun: per-TR orchestration of detrending, Kalman filtering, scaling and the feedback value.
#include "core/feedback/feedback_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/feedback/dynamic_scaling.hpp"

namespace rtf {
namespace {

constexpr size_t kMotionParameters = 6;

FeedbackConfig validated(FeedbackConfig config) {
  validate_feedback_config(config);
  return config;
}

std::vector<double> gather(const std::vector<double>& series, const std::vector<size_t>& positions) {
  std::vector<double> out;
  out.reserve(positions.size());
  for (const size_t p : positions) out.push_back(series[p]);
  return out;
}

void fail(FeedbackSample& s, FeedbackStatus status, std::string reason) {
  s.status = status;
  s.reason = std::move(reason);
  s.value = FeedbackSample::kNaN;
}

}  // namespace

std::string_view feedback_status_name(FeedbackStatus status) {
  switch (status) {
    case FeedbackStatus::kOk:
      return "ok";
    case FeedbackStatus::kNotEnoughBaseline:
      return "not-enough-baseline";
    case FeedbackStatus::kNotEnoughVolumes:
      return "not-enough-volumes";
    case FeedbackStatus::kNotBlockEnd:
      return "not-block-end";
    case FeedbackStatus::kNonFiniteRoi:
      return "non-finite-roi";
    case FeedbackStatus::kOutOfOrder:
      return "out-of-order";
    case FeedbackStatus::kMissingConnectivity:
      return "missing-connectivity";
    case FeedbackStatus::kDegenerate:
      return "degenerate";
    case FeedbackStatus::kDecoderOff:
      return "decoder-off";
  }
  return "?";
}

FeedbackRun::FeedbackRun(FeedbackConfig config, std::vector<Event> events)
    : config_(validated(std::move(config))),
      schedule_(std::move(events), config_.tr_s, config_.n_volumes, config_.baseline_condition,
                config_.regulation_conditions, config_.hrf_delay_s),
      detrend_(config_.detrend, config_.n_volumes, schedule_.task_regressors(config_.detrend.task_model),
               static_cast<int64_t>(config_.rois.size())) {
  if (config_.protocol == FeedbackProtocol::kIntermittent &&
      std::none_of(schedule_.blocks().begin(), schedule_.blocks().end(),
                   [](const ConditionBlock& b) { return b.condition == VolumeCondition::kRegulation; })) {
    throw std::invalid_argument("intermittent feedback: the events give no regulation block within the run");
  }
  rois_.resize(config_.rois.size());
  for (RoiState& r : rois_) {
    r.kalman = ModifiedKalmanFilter(config_.kalman);
    r.filtered.reserve(static_cast<size_t>(config_.n_volumes));
  }
  volumes_.reserve(static_cast<size_t>(config_.n_volumes));
  blocks_.reserve(static_cast<size_t>(config_.n_volumes));
}

FeedbackSample FeedbackRun::process(int64_t volume, std::span<const double> roi_means, std::span<const double> motion,
                                    std::optional<double> connectivity) {
  if (volume < 0) throw std::invalid_argument(fmt::format("feedback: negative volume index {}", volume));
  if (volume >= config_.n_volumes) {
    throw std::out_of_range(
        fmt::format("feedback: volume {} beyond the run's {} volumes (config.n_volumes)", volume, config_.n_volumes));
  }
  if (static_cast<int64_t>(roi_means.size()) != config_.n_rois) {
    throw std::invalid_argument(
        fmt::format("feedback: {} ROI means for volume {}, expected {}", roi_means.size(), volume, config_.n_rois));
  }
  if (!motion.empty() && motion.size() != kMotionParameters) {
    throw std::invalid_argument(
        fmt::format("feedback: {} motion parameters for volume {}, expected 6 or none", motion.size(), volume));
  }

  FeedbackSample s;
  s.volume = volume;
  s.block = schedule_.block(volume);
  s.condition = schedule_.condition(volume);
  if (s.condition == VolumeCondition::kRegulation) s.regulation_block = schedule_.ordinal(s.block);
  s.rois.resize(rois_.size());
  for (size_t r = 0; r < rois_.size(); ++r) {
    s.rois[r].roi = config_.rois[r];
    s.rois[r].raw = roi_means[static_cast<size_t>(config_.rois[r])];
  }

  const int64_t previous = volumes_.empty() ? -1 : volumes_.back();
  if (volume <= previous) {
    fail(s, FeedbackStatus::kOutOfOrder,
         fmt::format("volume {} does not follow volume {} (repeated or out of order): ignored", volume, previous));
    return s;
  }
  s.skipped_before = volume - previous - 1;
  for (const RoiSample& r : s.rois) {
    if (!std::isfinite(r.raw)) {
      fail(s, FeedbackStatus::kNonFiniteRoi,
           fmt::format("ROI {} mean is {} (an ROI without voxels?): volume {} left out", r.roi, r.raw, volume));
      return s;
    }
  }

  std::array<double, kMotionParameters> m = last_motion_;
  if (config_.detrend.motion_regressors) {
    const bool given = motion.size() == kMotionParameters &&
                       std::all_of(motion.begin(), motion.end(), [](double v) { return std::isfinite(v); });
    if (given) {
      std::copy(motion.begin(), motion.end(), m.begin());
      last_motion_ = m;
    } else {
      s.motion_imputed = true;
    }
  }

  // 1. Cumulative-GLM detrending over every accepted volume.
  std::vector<double> values(rois_.size());
  for (size_t r = 0; r < rois_.size(); ++r) values[r] = s.rois[r].raw;
  const DetrendResult d = detrend_.add(
      volume, values, config_.detrend.motion_regressors ? std::span<const double>(m) : std::span<const double>());
  const int64_t steps = previous < 0 ? 1 : volume - previous;
  volumes_.push_back(volume);
  blocks_.push_back(s.block);
  if (s.condition == VolumeCondition::kBaseline) baseline_positions_.push_back(volumes_.size() - 1);

  // 2. Modified Kalman filter.
  for (size_t r = 0; r < rois_.size(); ++r) {
    RoiState& st = rois_[r];
    RoiSample& rs = s.rois[r];
    rs.detrended = d.detrended(static_cast<Eigen::Index>(r));
    rs.level = d.level(static_cast<Eigen::Index>(r));
    st.detrended_moments.add(rs.detrended);
    if (config_.kalman.enabled) {
      const ModifiedKalmanFilter::Output k = st.kalman.update(rs.detrended, st.detrended_moments.stddev(), steps);
      rs.filtered = k.value;
      rs.spike = k.spike;
      s.any_spike = s.any_spike || k.spike;
    } else {
      rs.filtered = rs.detrended;
    }
    st.filtered.push_back(rs.filtered);
  }

  // 3-4. Scaling and the value.
  if (config_.mode == FeedbackMode::kConnectivity) {
    compute_connectivity(s, previous, connectivity);
  } else {
    compute_psc(s, previous);
  }
  if (s.status == FeedbackStatus::kOk) {
    double v = config_.gain * s.value;
    if (config_.min_value) v = std::max(v, *config_.min_value);
    if (config_.max_value) v = std::min(v, *config_.max_value);
    s.value = v;
  }
  return s;
}

std::vector<size_t> FeedbackRun::baseline_reference() const {
  if (config_.baseline_blocks == 0) return baseline_positions_;
  // The last k baseline blocks among the accepted volumes.
  std::vector<size_t> out;
  int64_t blocks_seen = 0, current = -2;
  for (auto it = baseline_positions_.rbegin(); it != baseline_positions_.rend(); ++it) {
    const int64_t b = blocks_[*it];
    if (b != current) {
      if (++blocks_seen > config_.baseline_blocks) break;
      current = b;
    }
    out.push_back(*it);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<size_t> FeedbackRun::positions_in(int64_t first, int64_t last) const {
  const auto lo = std::lower_bound(volumes_.begin(), volumes_.end(), first);
  const auto hi = std::upper_bound(volumes_.begin(), volumes_.end(), last);
  std::vector<size_t> out;
  for (auto it = lo; it < hi; ++it) out.push_back(static_cast<size_t>(it - volumes_.begin()));
  return out;
}

int64_t FeedbackRun::ended_regulation_block(int64_t volume, int64_t previous) const {
  int64_t found = -1;
  const std::vector<ConditionBlock>& blocks = schedule_.blocks();
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (blocks[b].condition == VolumeCondition::kRegulation && blocks[b].last > previous && blocks[b].last <= volume) {
      found = static_cast<int64_t>(b);
    }
  }
  return found;
}

std::string FeedbackRun::next_block_end(int64_t volume) const {
  for (const ConditionBlock& b : schedule_.blocks()) {
    if (b.condition == VolumeCondition::kRegulation && b.last >= volume) {
      return fmt::format("next value at volume {} (end of the '{}' block starting at volume {})", b.last, b.trial_type,
                         b.first);
    }
  }
  return "no regulation block left in the run";
}

void FeedbackRun::compute_psc(FeedbackSample& s, int64_t previous) {
  const bool intermittent = config_.protocol == FeedbackProtocol::kIntermittent;
  int64_t ended = -1;
  std::vector<size_t> block_positions;
  if (intermittent) {
    ended = ended_regulation_block(s.volume, previous);
    if (ended >= 0) {
      const ConditionBlock& b = schedule_.blocks()[static_cast<size_t>(ended)];
      s.block_end = true;
      s.regulation_block = schedule_.ordinal(ended);
      block_positions = positions_in(b.first, b.last);
    }
  }

  const std::vector<size_t> reference = baseline_reference();
  s.baseline_volumes = static_cast<int64_t>(reference.size());
  const size_t newest = volumes_.size() - 1;
  for (size_t r = 0; r < rois_.size(); ++r) {
    RoiSample& rs = s.rois[r];
    const std::vector<double>& f = rois_[r].filtered;
    if (!reference.empty()) rs.baseline = median(gather(f, reference));
    if (!(std::isfinite(rs.level) && rs.level > 0.0)) {
      fail(s, FeedbackStatus::kDegenerate,
           fmt::format("signal level of ROI {} is {} (must be > 0 for a percentage)", rs.roi, rs.level));
      return;
    }
    if (config_.scaling.enabled) {
      // Window: the last window_volumes volume indices (all so far when 0), current volume included.
      size_t start = 0;
      if (config_.scaling.window_volumes > 0) {
        start = positions_in(s.volume - config_.scaling.window_volumes + 1, s.volume).front();
      }
      ScalingLimits limits = dynamic_scaling_limits(std::span<const double>(f).subspan(start, newest + 1 - start),
                                                    config_.scaling.min_half_range * rs.level, config_.scaling);
      limits.include(rs.filtered);
      if (std::isfinite(rs.baseline)) limits.include(rs.baseline);
      if (!block_positions.empty()) limits.include(median(gather(f, block_positions)));
      rs.scale_lower = limits.lower;
      rs.scale_upper = limits.upper;
      rs.scaled = limits.scale(rs.filtered);
    }
  }

  if (intermittent && ended < 0) {
    fail(s, FeedbackStatus::kNotBlockEnd, "intermittent feedback: " + next_block_end(s.volume));
    return;
  }
  if (intermittent && block_positions.empty()) {
    fail(s, FeedbackStatus::kNotEnoughVolumes,
         fmt::format("regulation block {} has no accepted volume", s.regulation_block));
    return;
  }
  if (s.baseline_volumes < config_.min_baseline_volumes) {
    fail(s, FeedbackStatus::kNotEnoughBaseline,
         fmt::format("{} baseline volumes so far, {} needed", s.baseline_volumes, config_.min_baseline_volumes));
    return;
  }

  std::vector<double> psc(rois_.size());
  for (size_t r = 0; r < rois_.size(); ++r) {
    RoiSample& rs = s.rois[r];
    const double x = intermittent ? median(gather(rois_[r].filtered, block_positions)) : rs.filtered;
    rs.psc = config_.scaling.enabled ? (x - rs.baseline) / (rs.scale_upper - rs.scale_lower)
                                     : 100.0 * (x - rs.baseline) / rs.level;
    psc[r] = rs.psc;
  }
  double value = 0.0;
  if (config_.mode == FeedbackMode::kDifferentialPsc) {
    value = psc[0] - psc[1];
  } else {
    for (const double p : psc) value += p;
    value /= static_cast<double>(psc.size());
  }
  s.value = value;
}

void FeedbackRun::compute_connectivity(FeedbackSample& s, int64_t previous, std::optional<double> provided) {
  const bool intermittent = config_.protocol == FeedbackProtocol::kIntermittent;
  std::vector<size_t> positions;
  int64_t needed = 0;
  if (intermittent) {
    const int64_t ended = ended_regulation_block(s.volume, previous);
    if (ended < 0) {
      fail(s, FeedbackStatus::kNotBlockEnd, "intermittent feedback: " + next_block_end(s.volume));
      return;
    }
    const ConditionBlock& b = schedule_.blocks()[static_cast<size_t>(ended)];
    s.block_end = true;
    s.regulation_block = schedule_.ordinal(ended);
    positions = positions_in(b.first, b.last);
    needed = 3;
  } else {
    positions = positions_in(s.volume - config_.connectivity_window + 1, s.volume);
    needed = config_.connectivity_min_volumes > 0 ? config_.connectivity_min_volumes
                                                  : std::max<int64_t>(3, (config_.connectivity_window + 1) / 2);
  }

  double r = FeedbackSample::kNaN;
  if (config_.connectivity_source == ConnectivitySource::kProvided) {
    if (!provided || !std::isfinite(*provided) || std::abs(*provided) > 1.0) {
      fail(s, FeedbackStatus::kMissingConnectivity,
           provided ? fmt::format("provided connectivity {} is not a correlation in [-1, 1]", *provided)
                    : std::string("connectivity source is 'provided' but no value was given"));
      return;
    }
    r = *provided;
  } else {
    if (static_cast<int64_t>(positions.size()) < needed) {
      fail(s, FeedbackStatus::kNotEnoughVolumes,
           fmt::format("{} volumes in the {} window, {} needed", positions.size(),
                       intermittent ? "regulation block" : "connectivity", needed));
      return;
    }
    const std::vector<double> a = gather(rois_[0].filtered, positions), b = gather(rois_[1].filtered, positions);
    r = pearson(a, b);
    if (std::isnan(r)) {
      fail(s, FeedbackStatus::kDegenerate,
           fmt::format("ROI {} or {} is constant over the window: correlation undefined", config_.rois[0],
                       config_.rois[1]));
      return;
    }
  }
  s.connectivity = r;
  s.value = config_.fisher_z ? fisher_z(r) : r;
}

}  // namespace rtf
