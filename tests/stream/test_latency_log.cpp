// ctest-label: unit
// LatencyLog on a disk that fails: every row sent to /dev/full is counted as lost while the records stay in memory
// for the summary, which says what latency.jsonl lacks; latency_summary.json that cannot be written (RLIMIT_FSIZE)
// throws naming the file and the system's reason and leaves no file, neither a 0-byte one nor a temporary.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <cstring>
#include <fstream>

#include "stream/server/latency_log.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::stream {
namespace {

IngestLatency record(int64_t index) {
  IngestLatency r;
  r.run = "r1";
  r.index = index;
  r.received_ns = 1'000'000'000 + index * 1'000'000'000;
  r.written_ns = r.received_ns + 100'000;
  r.uploaded_ns = r.received_ns + 500'000;
  r.stats_ns = r.received_ns + 2'000'000;
  r.sent_ns = r.received_ns + 3'000'000;
  return r;
}

TEST(LatencyLog, RowsLostOnAFullDiskAreCountedAndKeptForTheSummary) {
  OutputFailures failures;
  LatencyLog log("/dev/full", &failures);
  for (int64_t i = 0; i < 7; ++i) log.add(record(i));
  EXPECT_EQ(log.records().size(), 7u);
  EXPECT_EQ(log.rows_lost(), 7);
  EXPECT_EQ(log.rows_written(), 0);
  EXPECT_EQ(log.close(), "");
  const nlohmann::json s = log.summary_json();
  EXPECT_EQ(s.at("volumes"), 7);
  EXPECT_EQ(s.at("latency_jsonl").at("rows_lost"), 7);
  EXPECT_EQ(s.at("latency_jsonl").at("rows_written"), 0);
  ASSERT_FALSE(s.at("stages").empty());
  EXPECT_EQ(s.at("stages").back().at("n"), 7);  // end to end over every volume, from memory
  ASSERT_EQ(failures.lost().size(), 1u);
  EXPECT_EQ(failures.lost()[0].rows_lost, 7);
  EXPECT_NE(failures.lost()[0].error.find(std::strerror(ENOSPC)), std::string::npos) << failures.lost()[0].error;
}

TEST(LatencyLog, RowsAreWrittenAsJsonLinesAndTheSummaryAtomically) {
  test::TempDir tmp("rtf-latency");
  OutputFailures failures;
  LatencyLog log(tmp / "latency.jsonl", &failures);
  for (int64_t i = 0; i < 3; ++i) log.add(record(i));
  EXPECT_EQ(log.close(), "");
  std::ifstream in(tmp / "latency.jsonl");
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    EXPECT_EQ(nlohmann::json::parse(line).at("index"), lines);
  }
  EXPECT_EQ(lines, 3);
  log.write_summary(tmp / "latency_summary.json");
  std::ifstream summary(tmp / "latency_summary.json");
  const nlohmann::json s = nlohmann::json::parse(summary);
  EXPECT_EQ(s.at("latency_jsonl").at("rows_written"), 3);
  EXPECT_EQ(s.at("latency_jsonl").at("rows_lost"), 0);
  EXPECT_TRUE(failures.lost().empty());
}

TEST(LatencyLog, ASummaryThatCannotBeWrittenThrowsWithTheErrnoAndLeavesNoFile) {
  test::TempDir tmp("rtf-latency");
  LatencyLog log("", nullptr);
  for (int64_t i = 0; i < 3; ++i) log.add(record(i));
  const std::filesystem::path path = tmp / "latency_summary.json";
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 16;  // far less than the summary
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  try {
    log.write_summary(path);
  } catch (const std::exception& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  EXPECT_NE(error.find("latency_summary.json"), std::string::npos) << error;
  EXPECT_NE(error.find(std::strerror(EFBIG)), std::string::npos) << error;
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path())) << "a temporary was left";
}

}  // namespace
}  // namespace rtf::stream
