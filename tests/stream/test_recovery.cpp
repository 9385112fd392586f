// ctest-label: unit
// Crash recovery: a forked child records volumes and dies by SIGKILL (after a payload without its journal line,
// inside a torn journal line, or killed by the parent at an arbitrary moment); the parent recovers the session and
// finds every acknowledged volume exactly, and can reopen the session and go on recording. Corrupt payload bytes
// and payload ranges past the end of volumes.bin are reported as corrupt, never as recovered.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "core/io/nifti_io.hpp"
#include "stream/recording/session_recorder.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::stream {
namespace {

using test::TempDir;

ImageHeader grid() {
  ImageHeader h;
  h.dims = {9, 7, 5};
  h.voxel_mm = {3.0, 3.0, 3.5};
  h.affine = Eigen::Vector4d(3.0, 3.0, 3.5, 1.0).asDiagonal();
  h.affine.topRightCorner<3, 1>() = Eigen::Vector3d(-12.0, -9.0, -7.0);
  h.tr_s = 0.8;
  h.source_type = DataType::kInt16;
  return h;
}

// Deterministic payload of volume `index`: the parent can recompute what the child recorded.
std::vector<std::byte> payload_of(int64_t index) {
  const auto n = static_cast<size_t>(grid().voxels_per_volume());
  std::vector<std::byte> bytes(n * 2);
  for (size_t i = 0; i < n; ++i) {
    const auto v = static_cast<int16_t>((static_cast<int64_t>(i) * 37 + index * 1009) % 30011 - 15000);
    std::memcpy(bytes.data() + 2 * i, &v, 2);
  }
  return bytes;
}

enum class Crash { kAfterPayload, kTornJournalLine, kKilledByParent };

// Runs in the child: records volumes 0, 1, ... writing the acknowledged count to `fd` after each, then crashes.
[[noreturn]] void child(const std::filesystem::path& dir, int fd, Crash crash, int volumes_before_crash) {
  SessionRecorder rec(dir);
  const int limit = crash == Crash::kKilledByParent ? 100000 : volumes_before_crash;
  for (int i = 0; i < limit; ++i) {
    const auto p = payload_of(i);
    if (rec.record({"run-01", i, grid(), p, 0.0, std::nullopt}).status != RecordStatus::kRecorded) ::_exit(3);
    const int32_t acked = i + 1;
    if (::write(fd, &acked, sizeof(acked)) != sizeof(acked)) ::_exit(4);
  }
  const std::filesystem::path run = dir / "runs" / "run-01";
  if (crash == Crash::kAfterPayload) {  // the payload of the next volume reached the file, its journal line did not
    const auto p = payload_of(limit);
    std::ofstream(run / "volumes.bin", std::ios::binary | std::ios::app)
        .write(reinterpret_cast<const char*>(p.data()), static_cast<std::streamsize>(p.size()) / 2);
  } else if (crash == Crash::kTornJournalLine) {  // a whole payload, then half of its journal line
    const auto p = payload_of(limit);
    std::ofstream(run / "volumes.bin", std::ios::binary | std::ios::app)
        .write(reinterpret_cast<const char*>(p.data()), static_cast<std::streamsize>(p.size()));
    std::ofstream(run / "journal.jsonl", std::ios::binary | std::ios::app)
        << R"({"index": )" << limit << R"(, "offset": 1)";
  }
  ::raise(SIGKILL);
  ::_exit(5);
}

// Forks the child, returns how many volumes it acknowledged before it died of SIGKILL.
int run_crashing_child(const std::filesystem::path& dir, Crash crash, int volumes_before_crash) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    child(dir, fds[1], crash, volumes_before_crash);
  }
  ::close(fds[1]);
  int acked = 0;
  int32_t value = 0;
  while (::read(fds[0], &value, sizeof(value)) == sizeof(value)) {
    acked = value;
    if (crash == Crash::kKilledByParent && acked == volumes_before_crash) ::kill(pid, SIGKILL);
  }
  ::close(fds[0]);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;
  return acked;
}

void expect_recovered_exactly(const RunRecovery& run, int acked) {
  ASSERT_TRUE(run.error.empty()) << run.error;
  EXPECT_TRUE(run.corrupt.empty());
  EXPECT_TRUE(run.missing.empty());
  ASSERT_GE(run.recovered, acked);  // a volume recorded but not yet acknowledged when killed may be there too
  const Image bold = read_nifti(run.nifti);
  ASSERT_EQ(bold.nt(), run.recovered);
  EXPECT_EQ(bold.header().dims, grid().dims);
  EXPECT_NEAR(bold.header().tr_s, grid().tr_s, 1e-6);
  EXPECT_LT((bold.header().affine - grid().affine).cwiseAbs().maxCoeff(), 1e-4);
  for (int64_t t = 0; t < run.recovered; ++t) {
    ASSERT_EQ(run.indices[static_cast<size_t>(t)], t);
    const auto p = payload_of(t);
    const auto v = bold.volume(t);
    for (size_t i = 0; i < v.size(); ++i) {
      int16_t expected;
      std::memcpy(&expected, p.data() + 2 * i, 2);
      ASSERT_EQ(v[i], static_cast<float>(expected)) << "volume " << t << " voxel " << i;
    }
  }
}

class CrashRecovery : public ::testing::TestWithParam<Crash> {};

TEST_P(CrashRecovery, EveryAcknowledgedVolumeIsRecoveredAndRecordingGoesOn) {
  TempDir tmp("rtf-recover");
  const int acked = run_crashing_child(tmp.path(), GetParam(), 12);
  ASSERT_GE(acked, 12);

  const RecoveryReport report = recover_session(tmp.path());
  ASSERT_TRUE(report.error.empty()) << report.error;
  ASSERT_EQ(report.runs.size(), 1u);
  const RunRecovery& run = report.runs[0];
  EXPECT_EQ(run.run, "run-01");
  EXPECT_FALSE(run.ended);
  EXPECT_EQ(run.torn_tail, GetParam() == Crash::kTornJournalLine);
  EXPECT_TRUE(report.complete());
  expect_recovered_exactly(run, acked);

  // Restart: the recorder drops the unjournaled bytes and the torn line, knows what it has, and goes on.
  const int64_t have = run.recovered;
  {
    SessionRecorder rec(tmp.path());
    const auto p = payload_of(have - 1);
    EXPECT_EQ(rec.record({"run-01", have - 1, grid(), p, 0.0, std::nullopt}).status, RecordStatus::kDuplicate);
    for (int64_t i = have; i < have + 3; ++i) {
      const auto q = payload_of(i);
      ASSERT_EQ(rec.record({"run-01", i, grid(), q, 0.0, std::nullopt}).status, RecordStatus::kRecorded);
    }
    const RunRecovery done = rec.finish_run("run-01");
    EXPECT_TRUE(done.complete()) << done.error;
    EXPECT_FALSE(done.torn_tail);
    expect_recovered_exactly(done, static_cast<int>(have + 3));
    EXPECT_EQ(done.recovered, have + 3);
  }
  EXPECT_EQ(std::filesystem::file_size(tmp.path() / "runs" / "run-01" / "volumes.bin"),
            static_cast<uint64_t>(have + 3) * payload_of(0).size());
}

INSTANTIATE_TEST_SUITE_P(Crashes, CrashRecovery,
                         ::testing::Values(Crash::kAfterPayload, Crash::kTornJournalLine, Crash::kKilledByParent));

TEST(Recovery, FlippedPayloadByteIsReportedCorrupt) {
  TempDir tmp("rtf-recover");
  const auto size = payload_of(0).size();
  {
    SessionRecorder rec(tmp.path(), {FsyncPolicy::kNone, ""});
    for (int64_t i = 0; i < 4; ++i) {
      const auto p = payload_of(i);
      ASSERT_EQ(rec.record({"r", i, grid(), p, 0.0, std::nullopt}).status, RecordStatus::kRecorded);
    }
  }
  {
    std::fstream f(tmp.path() / "runs" / "r" / "volumes.bin", std::ios::binary | std::ios::in | std::ios::out);
    f.seekg(static_cast<std::streamoff>(2 * size + 17));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x10);
    f.seekp(static_cast<std::streamoff>(2 * size + 17));
    f.write(&c, 1);
  }
  const RecoveryReport report = recover_session(tmp.path());
  ASSERT_EQ(report.runs.size(), 1u);
  const RunRecovery& run = report.runs[0];
  EXPECT_FALSE(report.complete());
  EXPECT_EQ(run.journaled, 4);
  EXPECT_EQ(run.recovered, 3);
  ASSERT_EQ(run.corrupt.size(), 1u);
  EXPECT_EQ(run.corrupt[0].index, 2);
  EXPECT_NE(run.corrupt[0].reason.find("crc32"), std::string::npos);
  EXPECT_EQ(run.indices, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(run.missing, (std::vector<int64_t>{2}));
  EXPECT_EQ(read_nifti(run.nifti).nt(), 3);
}

TEST(Recovery, PayloadRangePastTheEndIsReportedCorrupt) {
  TempDir tmp("rtf-recover");
  const auto size = payload_of(0).size();
  {
    SessionRecorder rec(tmp.path(), {FsyncPolicy::kNone, ""});
    for (int64_t i = 0; i < 3; ++i) {
      const auto p = payload_of(i);
      ASSERT_EQ(rec.record({"r", i, grid(), p, 0.0, std::nullopt}).status, RecordStatus::kRecorded);
    }
  }
  std::filesystem::resize_file(tmp.path() / "runs" / "r" / "volumes.bin", 2 * size + 5);
  const RecoveryReport report = recover_session(tmp.path());
  ASSERT_EQ(report.runs.size(), 1u);
  EXPECT_FALSE(report.complete());
  EXPECT_EQ(report.runs[0].recovered, 2);
  ASSERT_EQ(report.runs[0].corrupt.size(), 1u);
  EXPECT_EQ(report.runs[0].corrupt[0].index, 2);
  EXPECT_NE(report.runs[0].corrupt[0].reason.find("beyond"), std::string::npos);
}

TEST(Recovery, NotASessionDirectory) {
  TempDir tmp("rtf-recover");
  EXPECT_FALSE(recover_session(tmp.path()).error.empty());
}

}  // namespace
}  // namespace rtf::stream
