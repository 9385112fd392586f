// ctest-label: unit
// SessionRecorder's bound on open files: whatever the number of runs, at most max_open_runs runs keep their two files
// open (counted in /proc/self/fd); idle runs' files close by an injected clock (no sleeping); a closed run reopens on
// its next volume with its state kept (the journal is not read again), or rebuilt from the journal when its files
// changed while closed; under a low RLIMIT_NOFILE hundreds of runs are recorded, a bound too high for it is lowered to
// fit, descriptors taken by something else are met by closing other runs' files and retrying, and none left at all is
// a resource failure (not the sender's fault) until they are free again.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/io/nifti_io.hpp"
#include "stream/recording/session_recorder.hpp"
#include "tests/support/descriptors.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::stream {
namespace {

using std::chrono::seconds;
using test::DescriptorHog;
using test::LowDescriptorLimit;
using test::open_descriptors;
using test::TempDir;

ImageHeader grid() {
  ImageHeader h;
  h.dims = {5, 4, 3};
  h.voxel_mm = {2.0, 2.0, 3.0};
  h.affine.diagonal() << 2.0, 2.0, 3.0, 1.0;
  h.tr_s = 2.0;
  h.source_type = DataType::kInt16;
  return h;
}

std::vector<std::byte> payload(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> bytes(5 * 4 * 3 * 2);
  for (auto& b : bytes) b = static_cast<std::byte>(rng() & 0xff);
  return bytes;
}

RecordResult record(SessionRecorder& recorder, const std::string& run, int64_t index) {
  const std::vector<std::byte> bytes = payload(static_cast<uint32_t>(std::hash<std::string>{}(run) + index));
  RecordedVolume v;
  v.run = run;
  v.index = index;
  v.grid = grid();
  v.payload = bytes;
  return recorder.record(v);
}

std::string run_name(int r) {
  return "run-" + std::to_string(r);
}

// No fsync, and runs' files closed after `idle` by the clock `now` that the test moves.
RecorderOptions idle_options(std::chrono::steady_clock::time_point& now, std::chrono::seconds idle) {
  RecorderOptions options;
  options.fsync = FsyncPolicy::kNone;
  options.run_idle_close = idle;
  options.clock = [&now] { return now; };
  return options;
}

// Records volumes 0 and 1 of `runs` runs, every first volume before any second one (so each second volume finds its
// run's files closed when the bound is below `runs`); `after` runs after each volume.
void record_every_run_twice(SessionRecorder& recorder, int runs, const std::function<void()>& after = {}) {
  for (int64_t index = 0; index < 2; ++index) {
    for (int r = 0; r < runs; ++r) {
      const RecordResult result = record(recorder, run_name(r), index);
      ASSERT_EQ(result.status, RecordStatus::kRecorded) << run_name(r) << " #" << index << ": " << result.reason;
      if (after) after();
    }
  }
}

// Every voxel of the run's bold.nii.gz is the payload recorded for its index.
void expect_run_intact(SessionRecorder& recorder, const std::string& run, int64_t volumes) {
  const RunRecovery r = recorder.finish_run(run);
  ASSERT_TRUE(r.error.empty()) << r.error;
  ASSERT_EQ(r.recovered, volumes) << run;
  const Image image = read_nifti(r.nifti);
  const size_t voxels = 5 * 4 * 3;
  for (int64_t i = 0; i < volumes; ++i) {
    const std::vector<std::byte> bytes = payload(static_cast<uint32_t>(std::hash<std::string>{}(run) + i));
    for (size_t k = 0; k < voxels; ++k) {
      int16_t v = 0;
      std::memcpy(&v, bytes.data() + 2 * k, 2);
      ASSERT_EQ(image.data()[static_cast<size_t>(i) * voxels + k], static_cast<float>(v)) << run << " #" << i;
    }
  }
}

TEST(RecorderOpenFiles, DescriptorsStayBoundedWhateverTheNumberOfRuns) {
  TempDir tmp;
  RecorderOptions options;
  options.fsync = FsyncPolicy::kNone;
  options.max_open_runs = 4;
  const size_t before = open_descriptors();
  SessionRecorder recorder(tmp.path(), options);
  size_t most = 0;
  size_t most_runs = 0;
  ASSERT_NO_FATAL_FAILURE(record_every_run_twice(recorder, 300, [&] {
    most = std::max(most, open_descriptors());
    most_runs = std::max(most_runs, recorder.open_runs());
  }));
  EXPECT_EQ(most_runs, 4U);
  EXPECT_LE(most, before + 1 + 2 * 4);  // the lock and two files per open run
  EXPECT_EQ(recorder.counters().reopened, 300);
  EXPECT_EQ(recorder.counters().rebuilt, 0);  // the state was kept: no journal read again
  for (int r : {0, 137, 299}) expect_run_intact(recorder, run_name(r), 2);
  EXPECT_LE(open_descriptors(), before + 1 + 2 * 4);
}

TEST(RecorderOpenFiles, IdleRunsFilesCloseByTheClockAndReopenOnTheirNextVolume) {
  TempDir tmp;
  auto now = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  const RecorderOptions options = idle_options(now, seconds(30));
  SessionRecorder recorder(tmp.path(), options);
  ASSERT_EQ(record(recorder, "a", 0).status, RecordStatus::kRecorded);
  ASSERT_EQ(record(recorder, "b", 0).status, RecordStatus::kRecorded);
  const size_t both_open = open_descriptors();
  now += seconds(29);
  recorder.close_idle_runs();
  EXPECT_EQ(recorder.open_runs(), 2U);
  ASSERT_EQ(record(recorder, "b", 1).status, RecordStatus::kRecorded);  // b is used again
  now += seconds(2);                                                    // a idle 31 s, b 2 s
  recorder.close_idle_runs();
  EXPECT_EQ(recorder.open_runs(), 1U);
  EXPECT_EQ(open_descriptors(), both_open - 2);
  // The next volume of a (here a resend) reopens its files, finds them unchanged and keeps the state: a duplicate.
  EXPECT_EQ(record(recorder, "a", 0).status, RecordStatus::kDuplicate);
  EXPECT_EQ(recorder.open_runs(), 2U);
  EXPECT_EQ(open_descriptors(), both_open);
  ASSERT_EQ(record(recorder, "a", 1).status, RecordStatus::kRecorded);
  EXPECT_EQ(recorder.counters().reopened, 1);
  EXPECT_EQ(recorder.counters().rebuilt, 0);
  // An ended run's files close at once (nothing more is written to them).
  expect_run_intact(recorder, "a", 2);
  EXPECT_EQ(recorder.open_runs(), 1U);
  expect_run_intact(recorder, "b", 2);
  EXPECT_EQ(recorder.open_runs(), 0U);
}

TEST(RecorderOpenFiles, FilesChangedWhileClosedAreReadAgainFromTheJournal) {
  TempDir tmp;
  RecorderOptions options;
  options.fsync = FsyncPolicy::kNone;
  options.max_open_runs = 1;
  SessionRecorder recorder(tmp.path(), options);
  for (int64_t i = 0; i < 3; ++i) ASSERT_EQ(record(recorder, "a", i).status, RecordStatus::kRecorded);
  ASSERT_EQ(record(recorder, "other", 0).status, RecordStatus::kRecorded);  // closes a's files
  // While closed: stray bytes appended to volumes.bin, and the journal cut back to its first two lines by hand.
  const std::filesystem::path run_dir = tmp.path() / "runs" / "a";
  std::ofstream(run_dir / "volumes.bin", std::ios::app) << "stray bytes";
  {
    std::ifstream in(run_dir / "journal.jsonl");
    std::string first, second;
    std::getline(in, first);
    std::getline(in, second);
    in.close();
    std::ofstream(run_dir / "journal.jsonl", std::ios::trunc) << first << "\n" << second << "\n";
  }
  // Volume 2 is no longer journaled: recording it again is new, not a duplicate; the stray bytes are cut.
  ASSERT_EQ(record(recorder, "a", 2).status, RecordStatus::kRecorded);
  EXPECT_EQ(recorder.counters().rebuilt, 1);
  EXPECT_EQ(record(recorder, "a", 1).status, RecordStatus::kDuplicate);
  expect_run_intact(recorder, "a", 3);
  // The stray bytes and the payload no journal line claims any more were cut before #2 was appended again.
  EXPECT_EQ(std::filesystem::file_size(run_dir / "volumes.bin"), 3U * 5 * 4 * 3 * 2);
}

TEST(RecorderOpenFiles, HundredsOfRunsUnderALowDescriptorLimit) {
  TempDir tmp;
  RecorderOptions options;
  options.fsync = FsyncPolicy::kNone;
  const LowDescriptorLimit limit(100);
  SessionRecorder recorder(tmp.path(), options);
  ASSERT_NO_FATAL_FAILURE(record_every_run_twice(recorder, 400));
  EXPECT_EQ(recorder.counters().descriptor_retries, 0);  // the bound alone kept it within the limit
  for (int r : {0, 399}) expect_run_intact(recorder, run_name(r), 2);
}

TEST(RecorderOpenFiles, ABoundTooHighForTheLimitIsLoweredToFitIt) {
  TempDir tmp;
  RecorderOptions options;
  options.fsync = FsyncPolicy::kNone;
  options.max_open_runs = 10000;
  struct rlimit limit_now {};
  const LowDescriptorLimit limit(40);
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit_now), 0);
  SessionRecorder recorder(tmp.path(), options);
  EXPECT_LT(2 * recorder.max_open_runs(), limit_now.rlim_cur);  // a reserve is kept for sockets and outputs
  ASSERT_NO_FATAL_FAILURE(record_every_run_twice(recorder, 300));
  EXPECT_EQ(recorder.counters().descriptor_retries, 0);
  for (int r : {0, 299}) expect_run_intact(recorder, run_name(r), 2);
}

TEST(RecorderOpenFiles, DescriptorsTakenByOthersAreMetByClosingRunsFilesAndRetrying) {
  TempDir tmp;
  RecorderOptions options;
  options.fsync = FsyncPolicy::kNone;
  const LowDescriptorLimit limit(200);
  SessionRecorder recorder(tmp.path(), options);
  ASSERT_EQ(recorder.max_open_runs(), 32U);
  DescriptorHog hog;  // something else holds all descriptors but 13: room for fewer runs than the bound
  ASSERT_TRUE(hog.exhausted());
  hog.release(13);
  ASSERT_NO_FATAL_FAILURE(record_every_run_twice(recorder, 100));
  EXPECT_GT(recorder.counters().descriptor_retries, 0);
  EXPECT_LT(recorder.open_runs(), 7U);
  hog.release();
  for (int r : {0, 99}) expect_run_intact(recorder, run_name(r), 2);
}

TEST(RecorderOpenFiles, NoDescriptorLeftIsAResourceFailureNotTheSendersFault) {
  TempDir tmp;
  auto now = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  const RecorderOptions options = idle_options(now, seconds(10));
  const LowDescriptorLimit limit(30);
  SessionRecorder recorder(tmp.path(), options);
  ASSERT_EQ(record(recorder, "a", 0).status, RecordStatus::kRecorded);
  now += seconds(11);
  recorder.close_idle_runs();
  ASSERT_EQ(recorder.open_runs(), 0U);
  // Something else takes every descriptor left: the recorder has no run's files to close.
  DescriptorHog hog;
  ASSERT_TRUE(hog.exhausted());
  for (const std::string run : {"a", "new-run"}) {
    const RecordResult refused = record(recorder, run, 1);
    EXPECT_EQ(refused.status, RecordStatus::kRejected) << run;
    EXPECT_EQ(refused.kind, RejectKind::kResource) << run;
    EXPECT_NE(refused.reason.find("out of file descriptors"), std::string::npos) << refused.reason;
    EXPECT_NE(refused.reason.find("RLIMIT_NOFILE"), std::string::npos) << refused.reason;
  }
  EXPECT_EQ(recorder.counters().descriptor_retries, 2);
  hog.release();
  // Descriptors free again: the same volumes are recorded.
  ASSERT_EQ(record(recorder, "a", 1).status, RecordStatus::kRecorded);
  ASSERT_EQ(record(recorder, "new-run", 1).status, RecordStatus::kRecorded);
  expect_run_intact(recorder, "a", 2);
}

}  // namespace
}  // namespace rtf::stream
