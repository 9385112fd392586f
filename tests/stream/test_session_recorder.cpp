// ctest-label: unit
// SessionRecorder: round trip to bold.nii.gz (int16 and float32, odd dims, affine and TR), duplicates (also after a
// restart), inconsistent grids and bad input rejected, out-of-order indices sorted, gaps reported, session.json,
// the journal format. Also prints (does not assert) the per-volume record latency with and without fsync.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "core/io/nifti_io.hpp"
#include "stream/recording/session_recorder.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::stream {
namespace {

using test::TempDir;

ImageHeader make_grid(std::array<int64_t, 3> dims, DataType type) {
  ImageHeader h;
  h.dims = dims;
  h.voxel_mm = {2.5, 3.0, 3.5};
  const Eigen::Matrix3d r = Eigen::AngleAxisd(0.2, Eigen::Vector3d(0.1, 0.7, -0.3).normalized()).toRotationMatrix();
  h.affine.topLeftCorner<3, 3>() = r * Eigen::Vector3d(2.5, 3.0, 3.5).asDiagonal();
  h.affine.topRightCorner<3, 1>() = Eigen::Vector3d(-80.25, 11.5, 33.0);
  h.tr_s = 1.25;
  h.source_type = type;
  return h;
}

// Random payload bytes for one volume; float32 values are finite.
std::vector<std::byte> random_payload(const ImageHeader& g, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto n = static_cast<size_t>(g.voxels_per_volume());
  std::vector<std::byte> bytes(n * bytes_per_voxel(g.source_type));
  if (g.source_type == DataType::kInt16) {
    std::uniform_int_distribution<int> d(-32768, 32767);
    for (size_t i = 0; i < n; ++i) {
      const auto v = static_cast<int16_t>(d(rng));
      std::memcpy(bytes.data() + 2 * i, &v, 2);
    }
  } else {
    std::normal_distribution<float> d(500.0f, 120.0f);
    for (size_t i = 0; i < n; ++i) {
      const float v = d(rng);
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    }
  }
  return bytes;
}

RecordedVolume volume(const std::string& run, int64_t index, const ImageHeader& g,
                      const std::vector<std::byte>& payload) {
  return RecordedVolume{run, index, g, payload, 1000.0 + static_cast<double>(index), std::nullopt};
}

void expect_volume_equals(const Image& image, int64_t t, const ImageHeader& g, const std::vector<std::byte>& payload) {
  std::vector<float> expected(static_cast<size_t>(g.voxels_per_volume()));
  decode_payload(g.source_type, payload, expected);
  const auto got = image.volume(t);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), expected.size() * sizeof(float)), 0) << "volume " << t;
}

class RecorderRoundTrip : public ::testing::TestWithParam<DataType> {};

TEST_P(RecorderRoundTrip, EveryVoxelAffineAndTrSurvive) {
  TempDir tmp("rtf-rec");
  const ImageHeader g = make_grid({7, 5, 3}, GetParam());
  std::vector<std::vector<std::byte>> payloads;
  for (uint32_t i = 0; i < 6; ++i) payloads.push_back(random_payload(g, 100 + i));
  {
    SessionRecorder rec(tmp.path(), {FsyncPolicy::kEveryVolume, "s01"});
    for (size_t i = 0; i < payloads.size(); ++i) {
      const RecordResult r = rec.record(volume("run-1", static_cast<int64_t>(i), g, payloads[i]));
      ASSERT_EQ(r.status, RecordStatus::kRecorded) << r.reason;
    }
    const RunRecovery done = rec.finish_run("run-1");
    EXPECT_TRUE(done.complete()) << done.error;
    EXPECT_EQ(done.recovered, 6);
    EXPECT_TRUE(done.missing.empty());
    EXPECT_EQ(done.nifti, tmp.path() / "runs" / "run-1" / "bold.nii.gz");
  }
  const Image bold = read_nifti(tmp.path() / "runs" / "run-1" / "bold.nii.gz");
  EXPECT_EQ(bold.header().dims, g.dims);
  EXPECT_EQ(bold.nt(), 6);
  EXPECT_EQ(bold.header().source_type, g.source_type);
  EXPECT_NEAR(bold.header().tr_s, g.tr_s, 1e-6);
  EXPECT_LT((bold.header().affine - g.affine).cwiseAbs().maxCoeff(), 1e-4);
  for (size_t i = 0; i < payloads.size(); ++i) expect_volume_equals(bold, static_cast<int64_t>(i), g, payloads[i]);

  // session.json and the journal's end line.
  std::ifstream info(tmp.path() / "session.json");
  const nlohmann::json session = nlohmann::json::parse(info);
  EXPECT_EQ(session.at("session_id"), "s01");
  EXPECT_TRUE(session.contains("created"));
  EXPECT_TRUE(session.contains("software_version"));
  const JournalContents journal = read_journal(tmp.path() / "runs" / "run-1" / "journal.jsonl");
  EXPECT_EQ(journal.entries.size(), 6u);
  EXPECT_TRUE(journal.ended);
  EXPECT_EQ(journal.end_volumes, 6);
  EXPECT_EQ(journal.entries[3].crc32, crc32(payloads[3]));
  EXPECT_EQ(journal.entries[3].offset, 3 * payloads[0].size());
}

INSTANTIATE_TEST_SUITE_P(Types, RecorderRoundTrip, ::testing::Values(DataType::kInt16, DataType::kFloat32));

TEST(SessionRecorder, DuplicatesAreNotStoredTwiceAlsoAfterReopening) {
  TempDir tmp("rtf-rec");
  const ImageHeader g = make_grid({7, 5, 3}, DataType::kInt16);
  const auto a = random_payload(g, 1), b = random_payload(g, 2), c = random_payload(g, 3);
  {
    SessionRecorder rec(tmp.path());
    EXPECT_EQ(rec.record(volume("r", 0, g, a)).status, RecordStatus::kRecorded);
    EXPECT_EQ(rec.record(volume("r", 1, g, b)).status, RecordStatus::kRecorded);
    EXPECT_EQ(rec.record(volume("r", 1, g, b)).status, RecordStatus::kDuplicate);
    EXPECT_EQ(rec.record(volume("r", 0, g, c)).status, RecordStatus::kDuplicate);  // first copy wins
  }
  SessionRecorder rec(tmp.path());
  EXPECT_EQ(rec.record(volume("r", 1, g, b)).status, RecordStatus::kDuplicate);
  EXPECT_EQ(rec.record(volume("r", 2, g, c)).status, RecordStatus::kRecorded);
  const RunRecovery done = rec.finish_run("r");
  EXPECT_TRUE(done.complete());
  EXPECT_EQ(done.recovered, 3);
  EXPECT_EQ(std::filesystem::file_size(tmp.path() / "runs" / "r" / "volumes.bin"), 3 * a.size());
  EXPECT_EQ(read_journal(tmp.path() / "runs" / "r" / "journal.jsonl").entries.size(), 3u);
  // A finished run takes no new volume, but a resend of a recorded one is still a duplicate.
  EXPECT_EQ(rec.record(volume("r", 3, g, c)).status, RecordStatus::kRejected);
  EXPECT_EQ(rec.record(volume("r", 2, g, c)).status, RecordStatus::kDuplicate);
}

TEST(SessionRecorder, BeginThenCommitJournalsOnlyAtCommitAndFreesThePayloadEarly) {
  TempDir tmp("rtf-rec");
  const ImageHeader g = make_grid({9, 4, 3}, DataType::kInt16);
  const auto a = random_payload(g, 11), b = random_payload(g, 12);
  const auto journal = tmp.path() / "runs" / "r" / "journal.jsonl";
  SessionRecorder rec(tmp.path());
  EXPECT_THROW(rec.commit_record(), std::logic_error);  // nothing begun
  {
    std::vector<std::byte> payload = a;  // the caller may drop its payload as soon as begin_record returns
    ASSERT_EQ(rec.begin_record(volume("r", 0, g, payload)).status, RecordStatus::kRecorded);
    std::fill(payload.begin(), payload.end(), std::byte{0});
  }
  EXPECT_TRUE(read_journal(journal).entries.empty());                      // written, not yet journaled
  EXPECT_THROW(rec.begin_record(volume("r", 1, g, b)), std::logic_error);  // one at a time
  EXPECT_EQ(rec.commit_record().status, RecordStatus::kRecorded);
  EXPECT_EQ(read_journal(journal).entries.size(), 1u);
  EXPECT_EQ(rec.begin_record(volume("r", 0, g, b)).status, RecordStatus::kDuplicate);  // nothing pending after it
  EXPECT_EQ(rec.record(volume("r", 1, g, b)).status, RecordStatus::kRecorded);
  const RunRecovery done = rec.finish_run("r");
  ASSERT_TRUE(done.complete());
  const Image image = read_nifti(done.nifti);
  expect_volume_equals(image, 0, g, a);
  expect_volume_equals(image, 1, g, b);
}

TEST(SessionRecorder, InconsistentOrInvalidVolumesAreRejectedWithAReason) {
  TempDir tmp("rtf-rec");
  SessionRecorder rec(tmp.path(), {FsyncPolicy::kNone, ""});
  const ImageHeader g = make_grid({7, 5, 3}, DataType::kInt16);
  const auto p = random_payload(g, 1);
  ASSERT_EQ(rec.record(volume("r", 0, g, p)).status, RecordStatus::kRecorded);

  auto expect_rejected = [&](const RecordedVolume& v, const std::string& words) {
    const RecordResult r = rec.record(v);
    EXPECT_EQ(r.status, RecordStatus::kRejected);
    EXPECT_NE(r.reason.find(words), std::string::npos) << r.reason;
  };
  ImageHeader other = g;
  other.dims = {5, 7, 3};
  expect_rejected(volume("r", 1, other, p), "dims");
  other = g;
  other.source_type = DataType::kUint16;
  expect_rejected(volume("r", 1, other, p), "datatype");
  other = g;
  other.tr_s = 2.0;
  expect_rejected(volume("r", 1, other, p), "TR");
  other = g;
  other.affine(0, 3) += 1.0;
  expect_rejected(volume("r", 1, other, p), "affine");
  other = g;
  other.voxel_mm[2] = 4.0;
  expect_rejected(volume("r", 1, other, p), "voxel size");
  const std::vector<std::byte> short_payload(p.begin(), p.end() - 1);
  expect_rejected(volume("r", 1, g, short_payload), "payload is");
  expect_rejected(volume("r", -1, g, p), "negative");
  expect_rejected(volume("../evil", 1, g, p), "run id");
  expect_rejected(volume("", 1, g, p), "run id");

  // Nothing of the rejected volumes reached the files.
  EXPECT_EQ(std::filesystem::file_size(tmp.path() / "runs" / "r" / "volumes.bin"), p.size());
  EXPECT_EQ(read_journal(tmp.path() / "runs" / "r" / "journal.jsonl").entries.size(), 1u);
  // Another run may have another grid.
  EXPECT_EQ(rec.record(volume("r2", 0, make_grid({5, 7, 3}, DataType::kInt16), p)).status, RecordStatus::kRecorded);
}

TEST(SessionRecorder, OutOfOrderIndicesAreSortedAndGapsReported) {
  TempDir tmp("rtf-rec");
  const ImageHeader g = make_grid({7, 5, 3}, DataType::kFloat32);
  const std::vector<int64_t> order = {3, 0, 5, 1, 2};  // 4 never arrives
  std::map<int64_t, std::vector<std::byte>> payloads;
  SessionRecorder rec(tmp.path(), {FsyncPolicy::kNone, ""});
  for (int64_t i : order) {
    payloads[i] = random_payload(g, static_cast<uint32_t>(i + 50));
    ASSERT_EQ(rec.record(volume("r", i, g, payloads[i])).status, RecordStatus::kRecorded);
  }
  const RunRecovery done = rec.finish_run("r");
  EXPECT_TRUE(done.complete());
  EXPECT_EQ(done.indices, (std::vector<int64_t>{0, 1, 2, 3, 5}));
  EXPECT_EQ(done.missing, (std::vector<int64_t>{4}));
  const Image bold = read_nifti(done.nifti);
  ASSERT_EQ(bold.nt(), 5);
  for (size_t t = 0; t < done.indices.size(); ++t) {
    expect_volume_equals(bold, static_cast<int64_t>(t), g, payloads[done.indices[t]]);
  }
}

TEST(SessionRecorder, SecondRecorderOnTheSameDirectoryIsRefused) {
  TempDir tmp("rtf-rec");
  SessionRecorder first(tmp.path());
  EXPECT_THROW(SessionRecorder second(tmp.path()), RecordingError);
}

TEST(SessionRecorder, WriteFailureIsRejectedWithErrnoText) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores file permissions";
  TempDir tmp("rtf-rec");
  SessionRecorder rec(tmp.path());
  std::filesystem::permissions(tmp.path() / "runs",
                               std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  const ImageHeader g = make_grid({7, 5, 3}, DataType::kInt16);
  const RecordResult r = rec.record(volume("r", 0, g, random_payload(g, 1)));
  std::filesystem::permissions(tmp.path() / "runs", std::filesystem::perms::owner_all);
  EXPECT_EQ(r.status, RecordStatus::kRejected);
  EXPECT_NE(r.reason.find("ermission"), std::string::npos) << r.reason;
}

// A write cut short (here: the file size limit, EFBIG, which also hits root) is rejected with the errno text and
// the payload file is cut back, so the next volume is recorded normally.
TEST(SessionRecorder, PartialPayloadWriteIsCutBackAndRejected) {
  TempDir tmp("rtf-rec");
  SessionRecorder rec(tmp.path(), {FsyncPolicy::kNone, ""});
  const ImageHeader g = make_grid({7, 5, 3}, DataType::kInt16);
  const auto p = random_payload(g, 1);
  ASSERT_EQ(rec.record(volume("r", 0, g, p)).status, RecordStatus::kRecorded);
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = static_cast<rlim_t>(p.size() + p.size() / 2);  // room for half of the second payload
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const RecordResult r = rec.record(volume("r", 1, g, p));
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  EXPECT_EQ(r.status, RecordStatus::kRejected);
  EXPECT_NE(r.reason.find("volumes.bin"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("too large"), std::string::npos) << r.reason;
  EXPECT_EQ(std::filesystem::file_size(tmp.path() / "runs" / "r" / "volumes.bin"), p.size());
  EXPECT_EQ(read_journal(tmp.path() / "runs" / "r" / "journal.jsonl").entries.size(), 1u);
  ASSERT_EQ(rec.record(volume("r", 1, g, p)).status, RecordStatus::kRecorded);
  const RunRecovery done = rec.finish_run("r");
  EXPECT_TRUE(done.complete());
  EXPECT_EQ(done.recovered, 2);
}

// Report only: per-volume record() latency for a 64x64x33 int16 volume.
TEST(SessionRecorder, LatencyReport) {
  const ImageHeader g = make_grid({64, 64, 33}, DataType::kInt16);
  const auto p = random_payload(g, 7);
  for (FsyncPolicy policy : {FsyncPolicy::kEveryVolume, FsyncPolicy::kNone}) {
    TempDir tmp("rtf-rec");
    SessionRecorder rec(tmp.path(), {policy, ""});
    constexpr int kVolumes = 200;
    std::vector<double> ms;
    for (int i = 0; i < kVolumes; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      ASSERT_EQ(rec.record(volume("r", i, g, p)).status, RecordStatus::kRecorded);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("record latency 64x64x33 int16, fsync %s: median %.3f ms, p95 %.3f ms, max %.3f ms (%d volumes)\n",
                policy == FsyncPolicy::kEveryVolume ? "every volume" : "none", ms[ms.size() / 2],
                ms[ms.size() * 95 / 100], ms.back(), kVolumes);
  }
}

}  // namespace
}  // namespace rtf::stream
