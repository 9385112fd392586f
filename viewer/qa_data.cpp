// QaCarpet's ring, QaState::apply (the per-run QA merge) and the tally and alarm texts.
#include "viewer/qa_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rtf::viewer {

namespace {

std::string format(const char* spec, double value) {
  char text[48];
  std::snprintf(text, sizeof text, spec, value);
  return text;
}

}  // namespace

void QaCarpet::restart(int64_t rows, int64_t split) {
  if (count_ > 0) ++restarts_;  // columns discarded
  rows_ = std::max<int64_t>(0, rows);
  split_ = std::clamp<int64_t>(split, 0, rows_);
  values_.clear();
  volumes_.clear();
  next_ = 0;
  count_ = 0;
  ++version_;
}

void QaCarpet::append(int64_t volume, std::span<const float> column) {
  if (column.empty()) return;
  if (static_cast<int64_t>(column.size()) != rows_) restart(static_cast<int64_t>(column.size()), split_);
  const auto rows = static_cast<size_t>(rows_);
  if (volumes_.size() < capacity_) {  // still growing: the slots are in order
    values_.insert(values_.end(), column.begin(), column.end());
    volumes_.push_back(volume);
  } else {
    std::copy(column.begin(), column.end(), values_.begin() + static_cast<std::ptrdiff_t>(next_ * rows));
    volumes_[next_] = volume;
  }
  next_ = (next_ + 1) % capacity_;
  count_ = std::min(count_ + 1, capacity_);
  ++version_;
}

std::span<const float> QaCarpet::column(size_t k) const {
  if (k >= count_) return {};
  const size_t slot = count_ < capacity_ ? k : (next_ + k) % capacity_;
  const auto rows = static_cast<size_t>(rows_);
  return std::span<const float>(values_).subspan(slot * rows, rows);
}

int64_t QaCarpet::column_volume(size_t k) const {
  if (k >= count_) return -1;
  return volumes_[count_ < capacity_ ? k : (next_ + k) % capacity_];
}

void QaState::reset() {
  const size_t capacity = carpet.capacity();
  *this = QaState{};
  carpet = QaCarpet(capacity);
}

void QaState::apply(QaUpdate&& u, double dvars) {
  on = u.present;
  // An alarm already listed (a message that repeats the previous volume's QA) is not listed again.
  std::erase_if(u.alarms, [&](const QaAlarm& a) {
    return std::any_of(alarms.begin(), alarms.end(), [&](const QaAlarm& b) {
      return a.metric == b.metric && a.volume == b.volume && a.where == b.where;
    });
  });
  if (!u.alarms.empty()) {
    alarms_seen += static_cast<int64_t>(u.alarms.size());
    // The newest message's alarms first, in the order the server listed them.
    std::vector<QaAlarm> merged = std::move(u.alarms);
    if (merged.size() > kQaMaxAlarms) merged.resize(kQaMaxAlarms);
    for (QaAlarm& a : alarms) {
      if (merged.size() >= kQaMaxAlarms) break;
      merged.push_back(std::move(a));
    }
    alarms = std::move(merged);
  }
  if (!u.present) return;
  seen = true;
  if (std::isfinite(dvars)) u.sample.dvars = dvars;
  // A message whose QA repeats the previous volume's (the server's QA stage failed on this one) adds no sample.
  const bool repeat = !samples.empty() && u.sample.volume == samples.back().volume;
  if (!repeat) {
    latest = u.sample;
    samples.push_back(u.sample);
    worst_slice = u.worst_slice;
    for (int64_t s : u.flagged_slices) {
      flagged.push_back({u.sample.volume, s, s == u.worst_slice ? u.sample.slice_z_worst : kQaNaN});
    }
    if (flagged.size() > kQaMaxFlaggedSlices) {
      flagged.erase(flagged.begin(), flagged.end() - static_cast<std::ptrdiff_t>(kQaMaxFlaggedSlices));
    }
    flagged_now = std::move(u.flagged_slices);
  }
  if (u.has_thresholds) thresholds = u.thresholds;
  usable = std::move(u.usable);
  target_minutes = u.target_minutes;
  if (u.carpet_rows >= 0) {
    if (u.carpet_rows != carpet.rows()) {
      carpet.restart(u.carpet_rows, u.carpet_split);  // another set of carpet voxels: the old columns mean nothing
    } else {
      carpet.set_split(u.carpet_split);
    }
  }
  if (!repeat) carpet.append(u.sample.volume, u.carpet_column);
  if (!u.tsnr.empty()) {
    tsnr = std::move(u.tsnr);
    tsnr_volume = u.sample.volume;
    ++tsnr_version;
  }
  if (!u.cnr.empty()) {
    cnr = std::move(u.cnr);
    cnr_volume = u.sample.volume;
    ++cnr_version;
  }
}

std::string usable_line(const QaUsable& row, double target_minutes) {
  std::string line = format("%.2g mm: ", row.fd_threshold_mm) + std::to_string(row.frames) + " frames, " +
                     format("%.2f min", row.minutes);
  if (!std::isfinite(target_minutes)) return line;
  if (row.minutes >= target_minutes || (std::isfinite(row.minutes_to_target) && row.minutes_to_target <= 0)) {
    return line + format(" - reached %.3g min", target_minutes);
  }
  if (!std::isfinite(row.minutes_to_target)) return line + " - never at this rate";
  return line + format(" - %.1f more min", row.minutes_to_target) + format(" to reach %.3g min", target_minutes);
}

std::string alarm_line(const QaAlarm& a) {
  std::string line = "volume " + std::to_string(a.volume) + "  " + (a.metric.empty() ? "?" : a.metric) + " " +
                     (std::isfinite(a.value) ? format("%.3g", a.value) : "n/a");
  if (std::isfinite(a.threshold)) line += format(" (threshold %.3g)", a.threshold);
  if (!a.where.empty()) line += "  " + a.where;
  return line;
}

}  // namespace rtf::viewer
