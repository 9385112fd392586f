// RateLimitedLog: log lines that a sender (or a failing disk) can trigger once per message, bounded per key and
// interval. Each key (e.g. a NACK code) logs at most `lines_per_key` lines per interval; the rest are counted, and when
// the interval ends (at the next line or poll()) or at flush() one summary line says how many were suppressed, per key:
//   "61990 more NACKs suppressed in 10.0 s (invalid_field: 61980, checksum_mismatch: 10)".
// No count is lost: logged + suppressed = every call. The clock is injectable for tests. Thread-safe.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace rtf {

// A steady clock's now(); empty means std::chrono::steady_clock::now. Tests inject their own.
using SteadyNow = std::function<std::chrono::steady_clock::time_point()>;

struct LogRateLimit {
  int64_t lines_per_key = 5;                                                // logged per key in one interval
  std::chrono::steady_clock::duration interval = std::chrono::seconds(10);  // > 0
  size_t max_keys = 32;  // distinct keys counted per interval; later keys are counted as "other"
};

class RateLimitedLog {
 public:
  // `what` names the lines in the summary ("NACKs", "write failures"). `logger`: nullptr logs to spdlog's default
  // logger as it is at each call.
  explicit RateLimitedLog(std::string what, LogRateLimit limit = {}, SteadyNow now = {},
                          std::shared_ptr<spdlog::logger> logger = nullptr);
  ~RateLimitedLog();  // flush()
  RateLimitedLog(const RateLimitedLog&) = delete;
  RateLimitedLog& operator=(const RateLimitedLog&) = delete;

  // Logs the formatted line at `level` if `key` has lines left in this interval, else only counts it (nothing is
  // formatted). Returns whether it was logged.
  template <typename... Args>
  bool log(spdlog::level::level_enum level, std::string_view key, fmt::format_string<Args...> format, Args&&... args) {
    if (!admit(level, key)) return false;
    emit(level, fmt::format(format, std::forward<Args>(args)...));
    return true;
  }
  template <typename... Args>
  bool warn(std::string_view key, fmt::format_string<Args...> format, Args&&... args) {
    return log(spdlog::level::warn, key, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  bool error(std::string_view key, fmt::format_string<Args...> format, Args&&... args) {
    return log(spdlog::level::err, key, format, std::forward<Args>(args)...);
  }

  // Ends the interval if it is over, logging the summary of what it suppressed. Cheap; call it from a poll loop so
  // that a summary does not wait for the next line.
  void poll();
  // Logs the summary of what was suppressed so far (at shutdown), and starts a new interval.
  void flush();

  int64_t logged() const;      // lines logged since construction (summaries not included)
  int64_t suppressed() const;  // lines counted but not logged since construction

 private:
  bool admit(spdlog::level::level_enum level, std::string_view key);
  void emit(spdlog::level::level_enum level, const std::string& line) const;
  void end_interval_locked(std::chrono::steady_clock::time_point now, bool force);
  std::chrono::steady_clock::time_point now() const;

  std::string what_;
  LogRateLimit limit_;
  SteadyNow now_;
  std::shared_ptr<spdlog::logger> logger_;
  mutable std::mutex mutex_;
  bool open_ = false;  // an interval is running
  std::chrono::steady_clock::time_point start_;
  struct KeyCount {
    int64_t logged = 0;
    int64_t suppressed = 0;
  };
  std::map<std::string, KeyCount, std::less<>> keys_;  // this interval's
  int64_t interval_suppressed_ = 0;
  spdlog::level::level_enum summary_level_ = spdlog::level::trace;  // the highest level suppressed this interval
  int64_t logged_ = 0;
  int64_t suppressed_ = 0;
};

}  // namespace rtf
