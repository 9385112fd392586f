// ctest-label: unit
// IngestCore under resource pressure and abuse: descriptor exhaustion is NACKed `internal` (retryable) naming it, and
// the resent volume is ACKed once descriptors are free; only an invalid run id is `invalid_field`; with max_open_runs
// set too high for RLIMIT_NOFILE hundreds of runs are all ACKed; tick() closes idle runs' files by the injected clock;
// a flood of 10,000 NACKs logs a bounded number of lines while the counters keep every one, and the summary's counts
// are exact; the bounds are [server] keys.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <regex>
#include <variant>

#include "stream/pipeline/pipeline_config.hpp"
#include "stream/server/ingest_core.hpp"
#include "tests/support/descriptors.hpp"
#include "tests/support/log_capture.hpp"
#include "tests/support/stream_volumes.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::stream {
namespace {

using std::chrono::seconds;
using test::DescriptorHog;
using test::LowDescriptorLimit;
using test::TempDir;

using Message = test::SentVolume;
using test::send;

Message make_volume(const std::string& run, int64_t index) {
  test::VolumeSpec spec;
  spec.session = "s1";
  spec.run = run;
  spec.dims = {4, 3, 2};
  spec.affine = {{{2.0, 0, 0, 0}, {0, 2.0, 0, 0}, {0, 0, 2.0, 0}, {0, 0, 0, 1}}};
  spec.tr_s = 2.0;
  std::mt19937 rng(static_cast<uint32_t>(index * 7919 + run.size()));
  return test::int16_volume(spec, index, [&](size_t) { return static_cast<int16_t>(rng() & 0xffff); });
}

ErrorCode code_of(const Reply& r) {
  return std::holds_alternative<Ack>(r) ? ErrorCode::kOk : std::get<Nack>(r).code;
}
std::string reason_of(const Reply& r) {
  return std::holds_alternative<Ack>(r) ? "" : std::get<Nack>(r).reason;
}

IngestOptions options_with_clock(std::chrono::steady_clock::time_point& now) {
  IngestOptions options;
  options.recorder.fsync = FsyncPolicy::kNone;
  options.recorder.run_idle_close = seconds(10);
  options.recorder.clock = [&now] { return now; };
  return options;
}

TEST(IngestResources, OutOfDescriptorsIsNackedInternalAndTheResendIsAcked) {
  TempDir tmp;
  auto now = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  const LowDescriptorLimit limit(30);
  IngestCore core(tmp.path(), options_with_clock(now));
  ASSERT_EQ(code_of(send(core, make_volume("a", 0))), ErrorCode::kOk);
  const size_t with_a = test::open_descriptors();
  now += seconds(11);
  core.tick();  // a idle for longer than run_idle_close: its files close
  EXPECT_EQ(test::open_descriptors(), with_a - 2);
  {
    DescriptorHog hog;  // something else takes every descriptor left
    ASSERT_TRUE(hog.exhausted());
    for (const char* run : {"a", "b"}) {
      const Reply r = send(core, make_volume(run, 1));
      EXPECT_EQ(code_of(r), ErrorCode::kInternal) << run << ": " << reason_of(r);
      EXPECT_NE(reason_of(r).find("out of file descriptors"), std::string::npos) << reason_of(r);
    }
  }
  // Descriptors free again: the sender's resends are ACKed and recorded.
  EXPECT_EQ(code_of(send(core, make_volume("a", 1))), ErrorCode::kOk);
  EXPECT_EQ(code_of(send(core, make_volume("b", 1))), ErrorCode::kOk);
  const IngestStats s = core.stats();
  EXPECT_EQ(s.recorded, 3);
  EXPECT_EQ(s.nacks_by_code.at("internal"), 2);
  EXPECT_EQ(s.nacks_by_code.count("invalid_field"), 0U);
}

TEST(IngestResources, OnlyAnInvalidRunIdIsTheSendersFault) {
  TempDir tmp;
  IngestCore core(tmp.path());
  const Reply r = send(core, make_volume("../escape", 0));
  EXPECT_EQ(code_of(r), ErrorCode::kInvalidField) << reason_of(r);
}

TEST(IngestResources, HundredsOfRunsAreAckedWhenTheBoundIsTooHighForTheLimit) {
  TempDir tmp;
  IngestOptions options;
  options.recorder.fsync = FsyncPolicy::kNone;
  options.recorder.max_open_runs = 5000;
  const LowDescriptorLimit limit(48);
  IngestCore core(tmp.path(), options);
  for (int64_t index = 0; index < 2; ++index) {
    for (int r = 0; r < 300; ++r) {
      const Reply reply = send(core, make_volume("run-" + std::to_string(r), index));
      ASSERT_EQ(code_of(reply), ErrorCode::kOk) << r << " #" << index << ": " << reason_of(reply);
    }
  }
  EXPECT_EQ(core.stats().recorded, 600);
}

TEST(IngestResources, NackFloodLogsABoundedNumberOfLinesAndCountsEveryNack) {
  TempDir tmp;
  test::LogCapture capture;
  auto now = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  std::map<std::string, int64_t> sent;
  {
    IngestCore core(tmp.path(), options_with_clock(now));
    for (int i = 0; i < 10000; ++i) {  // 5 ms apart: 50 s, five intervals of 10 s
      Message m = make_volume("flood", i);
      if (i % 4 == 0) {
        m.header.checksum ^= 1;  // checksum_mismatch
      } else {
        m.payload.pop_back();  // payload_size
      }
      ++sent[i % 4 == 0 ? "checksum_mismatch" : "payload_size"];
      EXPECT_NE(code_of(send(core, m)), ErrorCode::kOk);
      now += std::chrono::milliseconds(5);
      if (i % 64 == 0) core.tick();
    }
    const IngestStats s = core.stats();
    EXPECT_EQ(s.nacked, 10000);
    EXPECT_EQ(s.nacks_by_code.at("checksum_mismatch"), sent["checksum_mismatch"]);
    EXPECT_EQ(s.nacks_by_code.at("payload_size"), sent["payload_size"]);
  }  // the core's end logs the last summary
  const std::vector<std::string> lines = capture.lines();
  std::map<std::string, int64_t> logged, suppressed;
  int summaries = 0;
  const std::regex nack_line(R"(^warning: NACK volume s1/flood #\d+: .* \(([a-z_]+)\)$)");
  const std::regex summary_line(R"(^warning: (\d+) more NACKs suppressed in [0-9.]+ s \((.*)\)$)");
  const std::regex pair(R"(([a-z_]+): (\d+))");
  for (const std::string& line : lines) {
    std::smatch m;
    if (std::regex_match(line, m, nack_line)) {
      ++logged[m[1]];
    } else if (std::regex_match(line, m, summary_line)) {
      ++summaries;
      const std::string breakdown = m[2];
      for (std::sregex_iterator it(breakdown.begin(), breakdown.end(), pair), end; it != end; ++it) {
        suppressed[(*it)[1]] += std::stoll((*it)[2]);
      }
    }
  }
  EXPECT_LE(lines.size(), 60U) << "5 intervals: 5 lines per code and a summary each";
  EXPECT_EQ(summaries, 5);
  for (const auto& [code, count] : sent) EXPECT_EQ(logged[code] + suppressed[code], count) << code;
}

TEST(IngestResources, TheBoundsAreServerKeys) {
  EXPECT_EQ(PipelineConfig{}.max_open_runs, RecorderOptions{}.max_open_runs);  // one default, stated twice
  EXPECT_EQ(std::chrono::duration<double>(RecorderOptions{}.run_idle_close).count(), PipelineConfig{}.run_idle_close_s);
  PipelineConfig c =
      parse_pipeline_config("[server]\nsession_dir = \"/d\"\nmax_open_runs = 8\nrun_idle_close_s = 2.5\n", "/");
  EXPECT_EQ(c.max_open_runs, 8U);
  EXPECT_DOUBLE_EQ(c.run_idle_close_s, 2.5);
  EXPECT_NO_THROW(validate(c));
  c.run_idle_close_s = 0;  // never
  EXPECT_NO_THROW(validate(c));
  c.run_idle_close_s = -1;
  EXPECT_THROW(validate(c), std::invalid_argument);
  c.run_idle_close_s = 1;
  c.max_open_runs = 0;
  EXPECT_THROW(validate(c), std::invalid_argument);
}

}  // namespace
}  // namespace rtf::stream
