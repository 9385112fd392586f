// ctest-label: unit
// IngestCore without sockets: ACK only after recording, duplicates re-ACKed, every rejection NACKed with its code
// (payload size, checksum, wrong session, inconsistent run, bad frames, malformed header, index bound), END_OF_RUN
// (incomplete, closed, repeated, run_closed afterwards), restart on the same directory, and the hand-off queue.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <variant>

#include "core/io/nifti_io.hpp"
#include "stream/server/ingest_core.hpp"
#include "tests/support/stream_volumes.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::stream {
namespace {

using test::TempDir;

using Message = test::SentVolume;
using test::send;

Message make_volume(int64_t index, uint32_t seed, const std::string& run = "run-1", const std::string& session = "s1") {
  test::VolumeSpec spec;
  spec.session = session;
  spec.run = run;
  spec.voxel_mm = {2.0, 2.5, 3.0};
  spec.affine = {{{2.0, 0, 0, -7}, {0, 2.5, 0, 5}, {0, 0, 3.0, 1.5}, {0, 0, 0, 1}}};
  spec.tr_s = 2.0;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-32768, 32767);
  return test::int16_volume(spec, index, [&](size_t) { return static_cast<int16_t>(d(rng)); });
}

ErrorCode nack_code(const Reply& r) {
  if (std::holds_alternative<Ack>(r)) return ErrorCode::kOk;
  return std::get<Nack>(r).code;
}

Reply parse(const std::string& text) {
  Parsed<Reply> p = parse_reply(text);
  EXPECT_TRUE(p.ok()) << text;
  return p.ok() ? *p.value : Reply{Nack{}};
}

std::span<const std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

TEST(IngestCore, RecordsAcknowledgesAndHandsOffInOrder) {
  TempDir tmp;
  IngestCore core(tmp.path());
  for (int64_t i = 0; i < 4; ++i) {
    const Reply r = send(core, make_volume(i, static_cast<uint32_t>(i + 10)));
    ASSERT_TRUE(std::holds_alternative<Ack>(r));
    EXPECT_EQ(std::get<Ack>(r).index, i);
    EXPECT_FALSE(std::get<Ack>(r).duplicate);
  }
  for (int64_t i = 0; i < 4; ++i) {
    auto v = core.queue().pop(std::chrono::milliseconds(0));
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->header.index, i);
    EXPECT_EQ(v->payload, make_volume(i, static_cast<uint32_t>(i + 10)).payload);
    EXPECT_GE(v->written_ns, v->received_ns);
    ASSERT_NE(v->recorded, nullptr);
    EXPECT_GE(v->recorded->recorded_ns(), v->written_ns);  // durable after it was handed on
  }
  EXPECT_EQ(core.stats().recorded, 4);
}

TEST(IngestCore, DuplicateIsAckedAgainAndNotRecordedTwice) {
  TempDir tmp;
  IngestCore core(tmp.path());
  const Message m = make_volume(3, 1);
  ASSERT_EQ(nack_code(send(core, m)), ErrorCode::kOk);
  const Reply again = send(core, m);
  ASSERT_TRUE(std::holds_alternative<Ack>(again));
  EXPECT_TRUE(std::get<Ack>(again).duplicate);
  EXPECT_EQ(core.stats().recorded, 1);
  EXPECT_EQ(core.stats().duplicates, 1);
  EXPECT_EQ(core.queue().size(), 1u);  // later stages see it once
}

TEST(IngestCore, CorruptPayloadsAreNackedAndNothingIsRecorded) {
  TempDir tmp;
  IngestCore core(tmp.path());
  Message m = make_volume(0, 2);
  Message flipped = m;
  flipped.payload[17] ^= std::byte{4};
  EXPECT_EQ(nack_code(send(core, flipped)), ErrorCode::kChecksumMismatch);
  Message short_payload = m;
  short_payload.payload.pop_back();
  EXPECT_EQ(nack_code(send(core, short_payload)), ErrorCode::kPayloadSize);
  EXPECT_EQ(core.stats().recorded, 0);
  // The intact resend is accepted as new.
  const Reply r = send(core, m);
  ASSERT_TRUE(std::holds_alternative<Ack>(r));
  EXPECT_FALSE(std::get<Ack>(r).duplicate);
}

TEST(IngestCore, SessionIsBoundByTheFirstVolumeAndSurvivesRestart) {
  TempDir tmp;
  {
    IngestCore core(tmp.path());
    ASSERT_EQ(nack_code(send(core, make_volume(0, 1, "run-1", "alpha"))), ErrorCode::kOk);
    const Reply other = send(core, make_volume(1, 1, "run-1", "beta"));
    EXPECT_EQ(nack_code(other), ErrorCode::kWrongSession);
    EXPECT_NE(std::get<Nack>(other).reason.find("alpha"), std::string::npos);
  }
  IngestCore restarted(tmp.path());
  EXPECT_EQ(nack_code(send(restarted, make_volume(1, 1, "run-1", "beta"))), ErrorCode::kWrongSession);
  // Volume 0 is known after the restart: a resend is a duplicate, volume 1 is new.
  const Reply dup = send(restarted, make_volume(0, 1, "run-1", "alpha"));
  ASSERT_TRUE(std::holds_alternative<Ack>(dup));
  EXPECT_TRUE(std::get<Ack>(dup).duplicate);
  EXPECT_EQ(nack_code(send(restarted, make_volume(1, 1, "run-1", "alpha"))), ErrorCode::kOk);
}

TEST(IngestCore, InconsistentGeometryIsNackedBeforeAndAfterRestart) {
  TempDir tmp;
  Message other = make_volume(1, 3);
  other.header.affine[0][3] += 0.01;  // 10 micrometres: beyond the 1e-4 mm tolerance
  {
    IngestCore core(tmp.path());
    ASSERT_EQ(nack_code(send(core, make_volume(0, 3))), ErrorCode::kOk);
    EXPECT_EQ(nack_code(send(core, other)), ErrorCode::kInconsistentRun);
    Message within = make_volume(2, 3);
    within.header.affine[0][3] += 5e-5;
    EXPECT_EQ(nack_code(send(core, within)), ErrorCode::kOk);
  }
  IngestCore restarted(tmp.path());  // the check now comes from the journal
  EXPECT_EQ(nack_code(send(restarted, other)), ErrorCode::kInconsistentRun);
}

TEST(IngestCore, IndexBoundComesFromTheLimits) {
  TempDir tmp;
  IngestOptions options;
  options.limits.max_volumes = 5;
  IngestCore core(tmp.path(), options);
  EXPECT_EQ(nack_code(send(core, make_volume(5, 1))), ErrorCode::kIndexOutOfRange);
  EXPECT_EQ(nack_code(send(core, make_volume(4, 1))), ErrorCode::kOk);
}

TEST(IngestCore, FramesAreCheckedAndMalformedHeadersAnswered) {
  TempDir tmp;
  IngestCore core(tmp.path());
  const Message m = make_volume(0, 4);
  const std::string header = serialize(m.header);
  {
    const std::vector<std::span<const std::byte>> frames{bytes_of(header)};
    const Reply r = parse(core.handle_frames(frames, 0));
    ASSERT_EQ(nack_code(r), ErrorCode::kBadFrames);
    EXPECT_EQ(std::get<Nack>(r).index, 0);  // echoed: the header itself was fine
  }
  {
    const std::string garbage = "{\"protocol\": 1, \"type\": \"volume\", \xff}";
    const std::vector<std::span<const std::byte>> frames{bytes_of(garbage), m.payload};
    const Reply r = parse(core.handle_frames(frames, 0));
    ASSERT_EQ(nack_code(r), ErrorCode::kMalformed);
    EXPECT_EQ(std::get<Nack>(r).of, ReplyTo::kUnknown);
  }
  {
    const std::vector<std::span<const std::byte>> none;
    EXPECT_EQ(nack_code(parse(core.handle_frames(none, 0))), ErrorCode::kBadFrames);
  }
  {
    const std::vector<std::span<const std::byte>> frames{bytes_of(header), m.payload};
    const Reply r = parse(core.handle_frames(frames, 0));
    ASSERT_TRUE(std::holds_alternative<Ack>(r));
  }
  const std::string end = serialize(EndOfRun{1, "s1", "run-1", 1});
  const std::vector<std::span<const std::byte>> two{bytes_of(end), m.payload};
  EXPECT_EQ(nack_code(parse(core.handle_frames(two, 0))), ErrorCode::kBadFrames);
  EXPECT_EQ(core.stats().recorded, 1);
  EXPECT_EQ(core.stats().nacked, 4);
}

TEST(IngestCore, EndOfRunNeedsEveryVolumeThenClosesTheRun) {
  TempDir tmp;
  IngestCore core(tmp.path());
  for (int64_t i : {0, 2, 3})
    ASSERT_EQ(nack_code(send(core, make_volume(i, static_cast<uint32_t>(i)))), ErrorCode::kOk);
  const Reply incomplete = core.handle_end_of_run(EndOfRun{1, "s1", "run-1", 4});
  ASSERT_EQ(nack_code(incomplete), ErrorCode::kIncompleteRun);
  EXPECT_NE(std::get<Nack>(incomplete).reason.find("1"), std::string::npos);
  EXPECT_EQ(nack_code(core.handle_end_of_run(EndOfRun{1, "s1", "run-1", 2})), ErrorCode::kIncompleteRun);  // 1 missing
  ASSERT_EQ(nack_code(send(core, make_volume(1, 1))), ErrorCode::kOk);
  EXPECT_EQ(nack_code(core.handle_end_of_run(EndOfRun{1, "s1", "run-1", 3})), ErrorCode::kInvalidField);  // has #3
  ASSERT_EQ(nack_code(core.handle_end_of_run(EndOfRun{1, "s1", "run-1", 4})), ErrorCode::kOk);
  EXPECT_EQ(nack_code(core.handle_end_of_run(EndOfRun{1, "s1", "run-1", 4})), ErrorCode::kOk);  // repeated
  EXPECT_EQ(nack_code(core.handle_end_of_run(EndOfRun{1, "s1", "run-1", 5})), ErrorCode::kRunClosed);
  EXPECT_EQ(nack_code(send(core, make_volume(4, 1))), ErrorCode::kRunClosed);
  EXPECT_TRUE(std::holds_alternative<Ack>(send(core, make_volume(2, 2))));  // a late resend: duplicate ACK
  EXPECT_EQ(core.stats().runs_closed, 1);

  const auto written = core.wait_for_run_files();  // the NIfTI is written off the ingest thread
  ASSERT_EQ(written.size(), 1u);
  EXPECT_NE(written[0].find("4 volumes"), std::string::npos) << written[0];
  const Image bold = read_nifti(tmp.path() / "runs" / "run-1" / "bold.nii.gz");
  ASSERT_EQ(bold.nt(), 4);
  EXPECT_DOUBLE_EQ(bold.header().tr_s, 2.0);
  for (int64_t t = 0; t < 4; ++t) {
    const Message m = make_volume(t, static_cast<uint32_t>(t));
    for (int64_t i = 0; i < 7 * 5 * 3; ++i) {
      int16_t v = 0;
      std::memcpy(&v, m.payload.data() + 2 * i, 2);
      ASSERT_EQ(bold.volume(t)[static_cast<size_t>(i)], static_cast<float>(v)) << "volume " << t << " voxel " << i;
    }
  }
}

TEST(IngestCore, OpenRunsAreWrittenAtShutdownWithoutEndingThem) {
  TempDir tmp;
  IngestCore core(tmp.path());
  for (int64_t i : {0, 1, 3}) ASSERT_EQ(nack_code(send(core, make_volume(i, 5))), ErrorCode::kOk);
  const auto lines = core.write_open_runs();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("missing 2"), std::string::npos) << lines[0];
  EXPECT_EQ(read_nifti(tmp.path() / "runs" / "run-1" / "bold.nii.gz").nt(), 3);
  EXPECT_EQ(nack_code(send(core, make_volume(2, 5))), ErrorCode::kOk);  // the run is still open
}

TEST(IngestCore, FullQueueDropsTheOldestForLaterStagesButRecordsEverything) {
  TempDir tmp;
  IngestOptions options;
  options.queue_capacity = 3;
  IngestCore core(tmp.path(), options);
  for (int64_t i = 0; i < 8; ++i) ASSERT_EQ(nack_code(send(core, make_volume(i, 6))), ErrorCode::kOk);
  EXPECT_EQ(core.stats().recorded, 8);
  EXPECT_EQ(core.stats().queue_dropped, 5);
  for (int64_t expected : {5, 6, 7}) EXPECT_EQ(core.queue().pop(std::chrono::milliseconds(0))->header.index, expected);
}

TEST(DropOldestQueue, ClosedQueueDrainsThenReturnsAtOnce) {
  DropOldestQueue<int> q(2);
  EXPECT_TRUE(q.push(1));
  EXPECT_TRUE(q.push(2));
  EXPECT_FALSE(q.push(3));
  q.close();
  EXPECT_FALSE(q.push(4));
  EXPECT_EQ(q.pop(std::chrono::seconds(5)), 2);
  EXPECT_EQ(q.pop(std::chrono::seconds(5)), 3);
  // Closed and empty: returns without waiting for its timeout (an hour; half of it is a bound no machine's slowness
  // reaches, so only a pop that waited fails).
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(q.pop(std::chrono::hours(1)).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::minutes(30));
  EXPECT_EQ(q.dropped(), 2);
}

// With a key (the run), a full queue drops from the run with the most items waiting: a flood of other runs never
// pushes out the one volume of the run that sends at the scanner's pace.
TEST(DropOldestQueue, WithAKeyAFloodOfOtherRunsDropsTheirOwnVolumes) {
  using Item = std::pair<std::string, int>;
  DropOldestQueue<Item> q(4, [](const Item& i) -> std::string_view { return i.first; });
  EXPECT_TRUE(q.push({"scan", 0}));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(q.push({"flood-a", i}));
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(q.push({i % 2 == 0 ? "flood-a" : "flood-b", 100 + i}));
  EXPECT_EQ(q.dropped(), 20);
  std::vector<Item> left;
  while (auto item = q.pop(std::chrono::seconds(0))) left.push_back(*item);
  ASSERT_EQ(left.size(), 4u);
  EXPECT_EQ(left[0], Item("scan", 0));  // the oldest item of all survived the flood
  // The flood runs share the rest; each kept its newest items.
  EXPECT_EQ(left[3], Item("flood-b", 119));
  // Ties between runs with as many items: the run whose oldest item is older loses it.
  DropOldestQueue<Item> tie(2, [](const Item& i) -> std::string_view { return i.first; });
  tie.push({"a", 0});
  tie.push({"b", 0});
  tie.push({"b", 1});  // a and b have one each: a's is older
  EXPECT_EQ(tie.pop(std::chrono::seconds(0)), Item("b", 0));
  EXPECT_EQ(tie.pop(std::chrono::seconds(0)), Item("b", 1));
  // Without a key it is the plain oldest.
  DropOldestQueue<Item> plain(2);
  plain.push({"scan", 0});
  plain.push({"flood", 0});
  plain.push({"flood", 1});
  EXPECT_EQ(plain.pop(std::chrono::seconds(0)), Item("flood", 0));
}

}  // namespace
}  // namespace rtf::stream
