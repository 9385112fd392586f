// RateLimitedLog: per-key line budgets per interval, and the summary line of what was suppressed.
#include "core/util/rate_limited_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace rtf {

RateLimitedLog::RateLimitedLog(std::string what, LogRateLimit limit, SteadyNow now,
                               std::shared_ptr<spdlog::logger> logger)
    : what_(std::move(what)), limit_(limit), now_(std::move(now)), logger_(std::move(logger)) {
  if (limit_.interval <= std::chrono::steady_clock::duration::zero()) limit_.interval = std::chrono::seconds(10);
  limit_.lines_per_key = std::max<int64_t>(limit_.lines_per_key, 0);
  limit_.max_keys = std::max<size_t>(limit_.max_keys, 1);
}

RateLimitedLog::~RateLimitedLog() {
  flush();
}

std::chrono::steady_clock::time_point RateLimitedLog::now() const {
  return now_ ? now_() : std::chrono::steady_clock::now();
}

void RateLimitedLog::emit(spdlog::level::level_enum level, const std::string& line) const {
  spdlog::logger* logger = logger_ ? logger_.get() : spdlog::default_logger_raw();
  if (logger != nullptr) logger->log(level, "{}", line);
}

bool RateLimitedLog::admit(spdlog::level::level_enum level, std::string_view key) {
  std::lock_guard lock(mutex_);
  const auto t = now();
  if (open_ && t - start_ >= limit_.interval) end_interval_locked(t, false);
  if (!open_) {
    open_ = true;
    start_ = t;
  }
  auto it = keys_.find(key);
  if (it == keys_.end()) it = keys_.try_emplace(keys_.size() < limit_.max_keys ? std::string(key) : "other").first;
  if (it->second.logged < limit_.lines_per_key) {
    ++it->second.logged;
    ++logged_;
    return true;
  }
  ++it->second.suppressed;
  ++interval_suppressed_;
  ++suppressed_;
  summary_level_ = std::max(summary_level_, level);
  return false;
}

void RateLimitedLog::end_interval_locked(std::chrono::steady_clock::time_point t, bool force) {
  if (!open_ || (!force && t - start_ < limit_.interval)) return;
  if (interval_suppressed_ > 0) {
    std::vector<std::pair<std::string, int64_t>> counts;
    for (const auto& [key, count] : keys_) {
      if (count.suppressed > 0) counts.emplace_back(key, count.suppressed);
    }
    std::stable_sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string breakdown;
    for (const auto& [key, count] : counts)
      breakdown += fmt::format("{}{}: {}", breakdown.empty() ? "" : ", ", key, count);
    const double seconds = std::chrono::duration<double>(std::min(t - start_, limit_.interval)).count();
    emit(summary_level_,
         fmt::format("{} more {} suppressed in {:.1f} s ({})", interval_suppressed_, what_, seconds, breakdown));
  }
  keys_.clear();
  interval_suppressed_ = 0;
  summary_level_ = spdlog::level::trace;
  open_ = false;
}

void RateLimitedLog::poll() {
  std::lock_guard lock(mutex_);
  if (open_) end_interval_locked(now(), false);
}

void RateLimitedLog::flush() {
  std::lock_guard lock(mutex_);
  end_interval_locked(now(), true);
}

int64_t RateLimitedLog::logged() const {
  std::lock_guard lock(mutex_);
  return logged_;
}

int64_t RateLimitedLog::suppressed() const {
  std::lock_guard lock(mutex_);
  return suppressed_;
}

}  // namespace rtf
