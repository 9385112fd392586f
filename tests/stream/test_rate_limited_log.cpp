// ctest-label: unit
// RateLimitedLog: a flood of 10,000 lines gives a bounded number of log lines, and the summaries' counts plus the lines
// logged add up exactly to what was sent, per key; intervals end by an injected clock (no sleeping); poll() and
// flush() emit the summary; too many distinct keys are counted as "other".
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <chrono>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/util/rate_limited_log.hpp"

namespace rtf {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using TimePoint = std::chrono::steady_clock::time_point;

// A logger writing "LEVEL: message" lines into a string, and a clock the test moves.
struct Capture {
  std::ostringstream text;
  std::shared_ptr<spdlog::logger> logger;
  TimePoint now{};
  Capture() {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text);
    sink->set_pattern("%l: %v");
    logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_level(spdlog::level::trace);
  }
  SteadyNow clock() {
    return [this] { return now; };
  }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::istringstream in(text.str());
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
};

// Adds each summary line's per-key counts to `suppressed`; returns the number of summary lines.
int add_summaries(const std::vector<std::string>& lines, std::map<std::string, int64_t>& suppressed) {
  static const std::regex kSummary(R"(^\w+: (\d+) more NACKs suppressed in [0-9.]+ s \((.*)\)$)");
  static const std::regex kPair(R"(([a-z_]+): (\d+))");
  int count = 0;
  for (const std::string& line : lines) {
    std::smatch m;
    if (!std::regex_match(line, m, kSummary)) continue;
    ++count;
    int64_t total = 0;
    const std::string breakdown = m[2];
    for (std::sregex_iterator it(breakdown.begin(), breakdown.end(), kPair), end; it != end; ++it) {
      suppressed[(*it)[1]] += std::stoll((*it)[2]);
      total += std::stoll((*it)[2]);
    }
    EXPECT_EQ(total, std::stoll(m[1])) << line;  // the total is the sum of its parts
  }
  return count;
}

std::map<std::string, int64_t> logged_lines(const std::vector<std::string>& lines) {
  std::map<std::string, int64_t> logged;
  static const std::regex kNack(R"(^warning: NACK #\d+ \(([a-z_]+)\)$)");
  for (const std::string& line : lines) {
    if (std::smatch m; std::regex_match(line, m, kNack)) ++logged[m[1]];
  }
  return logged;
}

TEST(RateLimitedLog, FloodWithinOneIntervalGivesTheLimitPerKeyAndOneExactSummary) {
  Capture c;
  {
    RateLimitedLog log("NACKs", LogRateLimit{5, seconds(10), 32}, c.clock(), c.logger);
    for (int i = 0; i < 10000; ++i) {
      const char* code = i % 10 == 3 ? "checksum_mismatch" : "invalid_field";
      log.warn(code, "NACK #{} ({})", i, code);
    }
    EXPECT_EQ(log.logged(), 10);
    EXPECT_EQ(log.suppressed(), 9990);
    EXPECT_EQ(c.lines().size(), 10U);  // nothing more until the interval ends or a flush
  }                                    // the destructor flushes
  const std::vector<std::string> lines = c.lines();
  ASSERT_EQ(lines.size(), 11U);
  EXPECT_EQ(lines.back(), "warning: 9990 more NACKs suppressed in 0.0 s (invalid_field: 8995, checksum_mismatch: 995)");
}

TEST(RateLimitedLog, FloodOverManyIntervalsIsBoundedAndCountsAreExact) {
  Capture c;
  RateLimitedLog log("NACKs", LogRateLimit{3, seconds(10), 32}, c.clock(), c.logger);
  std::map<std::string, int64_t> sent;
  const char* codes[] = {"invalid_field", "malformed", "bad_frames"};
  for (int i = 0; i < 10000; ++i) {  // one every 7 ms: 70 s, 7 intervals of 10 s
    const char* code = codes[(i * i) % 7 == 0 ? 1 : (i % 5 == 0 ? 2 : 0)];
    ++sent[code];
    log.warn(code, "NACK #{} ({})", i, code);
    c.now += milliseconds(7);
  }
  log.flush();
  const std::vector<std::string> lines = c.lines();
  std::map<std::string, int64_t> suppressed;
  const int summaries = add_summaries(lines, suppressed);
  const std::map<std::string, int64_t> logged = logged_lines(lines);
  EXPECT_EQ(
      static_cast<int>(lines.size()),
      summaries + static_cast<int>(logged.at("invalid_field") + logged.at("malformed") + logged.at("bad_frames")));
  EXPECT_LE(lines.size(), 7U * (3 * 3 + 1));  // per interval: 3 lines per key and one summary
  EXPECT_EQ(summaries, 7);
  for (const auto& [code, count] : sent) EXPECT_EQ(logged.at(code) + suppressed[code], count) << code;
  EXPECT_EQ(log.logged() + log.suppressed(), 10000);
}

TEST(RateLimitedLog, PollEndsTheIntervalOnlyWhenItIsOver) {
  Capture c;
  RateLimitedLog log("NACKs", LogRateLimit{1, seconds(10), 32}, c.clock(), c.logger);
  log.warn("malformed", "NACK #{} ({})", 0, "malformed");
  log.warn("malformed", "NACK #{} ({})", 1, "malformed");
  log.warn("malformed", "NACK #{} ({})", 2, "malformed");
  c.now += milliseconds(9999);
  log.poll();
  EXPECT_EQ(c.lines().size(), 1U);
  c.now += milliseconds(1);
  log.poll();
  ASSERT_EQ(c.lines().size(), 2U);
  EXPECT_EQ(c.lines()[1], "warning: 2 more NACKs suppressed in 10.0 s (malformed: 2)");
  // A new interval: its first line is logged again; nothing suppressed means no summary.
  EXPECT_TRUE(log.warn("malformed", "NACK #{} ({})", 3, "malformed"));
  c.now += seconds(60);
  log.poll();
  log.flush();
  EXPECT_EQ(c.lines().size(), 3U);
}

TEST(RateLimitedLog, SummaryTakesTheHighestSuppressedLevelAndTooManyKeysBecomeOther) {
  Capture c;
  RateLimitedLog log("NACKs", LogRateLimit{1, seconds(10), 2}, c.clock(), c.logger);
  log.warn("a_key", "x");
  log.warn("a_key", "x");
  log.error("b_key", "y");
  log.error("b_key", "y");
  for (int i = 0; i < 5; ++i) log.warn(fmt::format("key_{}", i), "z");  // keys beyond the first two
  log.flush();
  const std::vector<std::string> lines = c.lines();
  ASSERT_EQ(lines.size(), 4U);  // a_key, b_key, the first "other", the summary
  EXPECT_EQ(lines.back(), "error: 6 more NACKs suppressed in 0.0 s (other: 4, a_key: 1, b_key: 1)");
}

}  // namespace
}  // namespace rtf
