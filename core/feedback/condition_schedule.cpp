// Volume labels and blocks of a neurofeedback run from its events, shifted by the haemodynamic delay.
#include "core/feedback/condition_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/design/design_matrix.hpp"

namespace rtf {
namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool covers(const Event& e, double s) {
  return e.duration_s > 0.0 && s >= e.onset_s && s < e.onset_s + e.duration_s;
}

}  // namespace

std::string_view volume_condition_name(VolumeCondition condition) {
  switch (condition) {
    case VolumeCondition::kNone:
      return "none";
    case VolumeCondition::kBaseline:
      return "baseline";
    case VolumeCondition::kRegulation:
      return "regulation";
    case VolumeCondition::kOther:
      return "other";
  }
  return "?";
}

ConditionSchedule::ConditionSchedule(std::vector<Event> events, double tr_s, int64_t n_volumes,
                                     std::string baseline_condition,
                                     const std::vector<std::string>& regulation_conditions, double hrf_delay_s)
    : events_(std::move(events)), tr_s_(tr_s), hrf_delay_s_(hrf_delay_s), baseline_(std::move(baseline_condition)) {
  if (!(std::isfinite(tr_s) && tr_s > 0.0)) throw std::invalid_argument("condition schedule: TR must be > 0");
  if (n_volumes <= 0) throw std::invalid_argument("condition schedule: n_volumes must be > 0");
  if (!(std::isfinite(hrf_delay_s) && hrf_delay_s >= 0.0)) {
    throw std::invalid_argument("condition schedule: haemodynamic delay must be >= 0");
  }
  const std::vector<std::string> types = trial_types(events_);
  if (!baseline_.empty() && !contains(types, baseline_)) {
    throw std::invalid_argument(fmt::format("baseline condition '{}' has no events", baseline_));
  }
  for (const std::string& r : regulation_conditions) {
    if (!contains(types, r)) throw std::invalid_argument(fmt::format("regulation condition '{}' has no events", r));
    if (r == baseline_) {
      throw std::invalid_argument(fmt::format("condition '{}' is both baseline and regulation", r));
    }
  }
  for (const std::string& t : types) {
    if (t == baseline_) continue;
    task_.push_back(t);
    if (regulation_conditions.empty() || contains(regulation_conditions, t)) regulation_.push_back(t);
  }

  // Label every volume: (condition, event index).
  std::vector<VolumeCondition> label(static_cast<size_t>(n_volumes), VolumeCondition::kNone);
  std::vector<int64_t> event_of(static_cast<size_t>(n_volumes), -1);
  for (int64_t i = 0; i < n_volumes; ++i) {
    const double s = static_cast<double>(i) * tr_s_ - hrf_delay_s_;
    int64_t regulation = -1, other = -1, baseline = -1;
    for (size_t e = 0; e < events_.size(); ++e) {
      const Event& ev = events_[e];
      if (!covers(ev, s)) continue;
      const auto index = static_cast<int64_t>(e);
      if (ev.trial_type == baseline_) {
        if (baseline < 0) baseline = index;
      } else if (contains(regulation_, ev.trial_type)) {
        if (regulation < 0) regulation = index;
      } else if (other < 0) {
        other = index;
      }
    }
    const auto k = static_cast<size_t>(i);
    if (regulation >= 0) {
      label[k] = VolumeCondition::kRegulation;
      event_of[k] = regulation;
    } else if (other >= 0) {
      label[k] = VolumeCondition::kOther;
      event_of[k] = other;
    } else if (baseline >= 0) {
      label[k] = VolumeCondition::kBaseline;
      event_of[k] = baseline;
    } else if (baseline_.empty() && s >= 0.0) {
      label[k] = VolumeCondition::kBaseline;  // rest
    }
  }

  // Blocks: maximal runs of the same (label, event).
  block_of_.assign(static_cast<size_t>(n_volumes), -1);
  int64_t regulation_count = 0, baseline_count = 0;
  for (int64_t i = 0; i < n_volumes; ++i) {
    const auto k = static_cast<size_t>(i);
    if (label[k] == VolumeCondition::kNone) continue;
    const bool continues = i > 0 && label[k - 1] == label[k] && event_of[k - 1] == event_of[k];
    if (!continues) {
      ConditionBlock b;
      b.condition = label[k];
      b.event = event_of[k];
      if (b.event >= 0) b.trial_type = events_[static_cast<size_t>(b.event)].trial_type;
      b.first = i;
      blocks_.push_back(b);
      if (b.condition == VolumeCondition::kRegulation) {
        ordinal_.push_back(regulation_count++);
      } else if (b.condition == VolumeCondition::kBaseline) {
        ordinal_.push_back(baseline_count++);
      } else {
        ordinal_.push_back(-1);
      }
    }
    blocks_.back().last = i;
    block_of_[k] = static_cast<int64_t>(blocks_.size()) - 1;
  }
}

VolumeCondition ConditionSchedule::condition(int64_t volume) const {
  const int64_t b = block(volume);
  return b < 0 ? VolumeCondition::kNone : blocks_[static_cast<size_t>(b)].condition;
}

int64_t ConditionSchedule::block(int64_t volume) const {
  if (volume < 0 || volume >= n_volumes()) {
    throw std::out_of_range(fmt::format("volume {} outside the run (0..{})", volume, n_volumes() - 1));
  }
  return block_of_[static_cast<size_t>(volume)];
}

Eigen::MatrixXd ConditionSchedule::task_regressors(TaskModel model) const {
  const Eigen::Index n = n_volumes();
  const auto k = static_cast<Eigen::Index>(task_.size());
  if (model == TaskModel::kNone || k == 0) return Eigen::MatrixXd(n, 0);
  if (model == TaskModel::kHrf) {
    DesignOptions o;
    o.tr_s = tr_s_;
    o.n_scans = n;
    o.conditions = task_;
    o.modulation = ModulationModel::kIgnore;
    o.drift = DriftModel::kNone;
    o.add_constant = false;
    const DesignMatrix d = build_design_matrix(events_, o);
    Eigen::MatrixXd x(n, k);
    for (Eigen::Index c = 0; c < k; ++c) x.col(c) = d.x.col(*d.find(task_[static_cast<size_t>(c)]));
    return x;
  }
  Eigen::MatrixXd x = Eigen::MatrixXd::Zero(n, k);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double s = static_cast<double>(i) * tr_s_ - hrf_delay_s_;
    for (const Event& e : events_) {
      if (!covers(e, s)) continue;
      const auto it = std::find(task_.begin(), task_.end(), e.trial_type);
      if (it != task_.end()) x(i, it - task_.begin()) = 1.0;
    }
  }
  return x;
}

}  // namespace rtf
