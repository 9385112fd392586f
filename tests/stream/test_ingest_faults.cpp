// ctest-label: unit
// The ingest path over real ZeroMQ sockets (server thread + simulator sender in one process): a clean round trip and
// every fault the simulator injects (drop, duplicate, reorder, jitter, corrupt header, corrupt payload, disconnect
// and reconnect) end with every volume recorded exactly once, bit for bit, in index order, and the run closed.
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <random>
#include <set>
#include <thread>

#include "core/io/nifti_io.hpp"
#include "sim/replay/replay.hpp"
#include "stream/recording/journal.hpp"
#include "stream/server/ingest_core.hpp"
#include "stream/server/zmq_ingest_server.hpp"
#include "tests/support/ingest_server.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::sim {
namespace {

using test::TempDir;

// Random int16-valued 4D image on an odd grid with an oblique-ish affine.
Image source_image(int64_t volumes, uint32_t seed) {
  ImageHeader h;
  h.dims = {13, 11, 7};
  h.num_volumes = volumes;
  h.voxel_mm = {3.0, 3.0, 3.5};
  h.affine << 3.0, 0.1, 0, -20, 0, 3.0, 0.2, -15, 0, 0, 3.5, 4, 0, 0, 0, 1;
  h.tr_s = 2.0;
  h.source_type = DataType::kInt16;
  Image image(h);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-32768, 32767);
  for (float& v : image.data()) v = static_cast<float>(d(rng));
  return image;
}

struct Outcome {
  ReplayReport report;
  stream::IngestStats server;
};

// `resend_timeout_s`: short where a fault needs a resend after silence (a lost volume, an unreadable header); a
// spurious resend on a slow machine only adds a duplicate, which every fault test tolerates, and the sender gives a
// volume up only after 20 silent timeouts (20 s here, far beyond a healthy disk's fsync). The clean round trip counts
// transmissions exactly, so it waits far longer still before resending.
Outcome replay_with(const Image& image, const FaultOptions& faults, const TempDir& tmp, double resend_timeout_s = 1.0) {
  test::IngestServer server(tmp.path());
  ReplayOptions options;
  options.address = server.endpoint();
  options.speed = 0;
  options.resend_timeout_s = resend_timeout_s;
  options.finish_timeout_s = 300;
  options.faults = faults;
  zmq::context_t context(1);
  Outcome out{replay(image, options, context), {}};
  out.server = server.core().stats();
  return out;
}

// Every volume recorded exactly once, bit for bit, in index order.
void expect_recorded_exactly_once(const Image& image, const TempDir& tmp) {
  const auto run_dir = tmp.path() / "runs" / "run-01";
  const stream::JournalContents journal = stream::read_journal(run_dir / "journal.jsonl");
  std::multiset<int64_t> indices;
  for (const auto& e : journal.entries) indices.insert(e.index);
  EXPECT_EQ(journal.entries.size(), static_cast<size_t>(image.nt()));
  for (int64_t i = 0; i < image.nt(); ++i) EXPECT_EQ(indices.count(i), 1u) << "volume " << i;
  EXPECT_TRUE(journal.ended);
  const Image bold = read_nifti(run_dir / "bold.nii.gz");
  ASSERT_EQ(bold.nt(), image.nt());
  EXPECT_EQ(bold.header().source_type, DataType::kInt16);
  EXPECT_TRUE(bold.header().same_grid(image.header(), 1e-4));
  EXPECT_EQ(bold.data(), image.data());
}

// One fault (or none, or all at once) of the simulator: the run it sends, what it injects, and what the fault must
// have caused beyond every volume being recorded exactly once.
struct FaultCase {
  const char* name;
  int64_t volumes = 24;
  uint32_t image_seed = 1;
  FaultOptions faults{};
  double resend_timeout_s = 1.0;
  std::function<void(const Outcome&)> caused = [](const Outcome&) {};
};

// ctest and gtest name a case by its name, not by its bytes.
void PrintTo(const FaultCase& c, std::ostream* os) {
  *os << c.name;
}

// The clean round trip counts transmissions exactly, so it waits far longer before resending (see replay_with).
const FaultCase kFaultCases[] = {
    {.name = "CleanRoundTrip",
     .volumes = 20,
     .image_seed = 1,
     .resend_timeout_s = 600.0,
     .caused =
         [](const Outcome& o) {
           EXPECT_EQ(o.report.stats.transmissions, 20);
           EXPECT_EQ(o.report.stats.nacks, 0);
           EXPECT_EQ(o.server.recorded, 20);
         }},
    {.name = "DroppedVolumesAreResentAfterTheTimeout",
     .image_seed = 2,
     .faults = {.drop = 0.25, .seed = 11},
     .caused = [](const Outcome& o) { EXPECT_GT(o.report.stats.resends, 0); }},
    {.name = "DuplicatesAreAcknowledgedButRecordedOnce",
     .image_seed = 3,
     .faults = {.duplicate = 0.3, .seed = 12},
     .caused =
         [](const Outcome& o) {
           EXPECT_GT(o.server.duplicates, 0);
           EXPECT_EQ(o.server.recorded, 24);
         }},
    {.name = "ReorderedAndJitteredVolumesEndUpInIndexOrder",
     .image_seed = 4,
     .faults = {.reorder = 0.4, .jitter_s = 0.01, .seed = 13}},
    {.name = "CorruptPayloadsAreNackedAndResentIntact",
     .image_seed = 5,
     .faults = {.corrupt = 0.3, .corrupt_target = CorruptTarget::kPayload, .seed = 14},
     .caused = [](const Outcome& o) { EXPECT_GT(o.server.nacks_by_code.count("checksum_mismatch"), 0u); }},
    {.name = "CorruptHeadersAreNackedAndResentIntact",
     .image_seed = 6,
     .faults = {.corrupt = 0.3, .corrupt_target = CorruptTarget::kHeader, .seed = 15},
     .caused = [](const Outcome& o) { EXPECT_GT(o.server.nacks_by_code.count("malformed"), 0u); }},
    {.name = "DisconnectThenReconnectResendsWhatWasUnacknowledged",
     .image_seed = 7,
     .faults = {.disconnect_after = 10},
     .caused = [](const Outcome& o) { EXPECT_EQ(o.report.stats.reconnects, 1); }},
    {.name = "EverythingAtOnce",
     .volumes = 40,
     .image_seed = 8,
     .faults = {.drop = 0.1,
                .duplicate = 0.1,
                .reorder = 0.2,
                .corrupt = 0.15,
                .jitter_s = 0.005,
                .disconnect_after = 17,
                .seed = 16}},
};

class FaultReplay : public ::testing::TestWithParam<FaultCase> {};

TEST_P(FaultReplay, EveryVolumeIsRecordedExactlyOnce) {
  const FaultCase& c = GetParam();
  TempDir tmp;
  const Image image = source_image(c.volumes, c.image_seed);
  if (c.faults.reorder > 0) {
    const auto plan = plan_faults(0, c.volumes, c.faults);
    bool swapped = false;
    for (size_t i = 0; i < plan.size(); ++i) swapped |= plan[i].index != static_cast<int64_t>(i);
    ASSERT_TRUE(swapped) << "the seed must produce at least one swap";
  }
  const Outcome o = replay_with(image, c.faults, tmp, c.resend_timeout_s);
  ASSERT_TRUE(o.report.ok()) << (o.report.failures.empty() ? "" : o.report.failures[0]);
  c.caused(o);
  expect_recorded_exactly_once(image, tmp);
}

INSTANTIATE_TEST_SUITE_P(IngestFaults, FaultReplay, ::testing::ValuesIn(kFaultCases),
                         [](const ::testing::TestParamInfo<FaultCase>& c) { return std::string(c.param.name); });

TEST(IngestFaults, OversizedFrameDropsOnlyThatConnection) {
  TempDir tmp;
  stream::IngestCore core(tmp.path());
  zmq::context_t context(1);
  stream::ZmqServerOptions options;
  options.address = "tcp://127.0.0.1:*";
  options.max_message_bytes = 64 << 10;  // 64 KiB frames at most
  stream::ZmqIngestServer server(context, core, options);
  std::thread thread([&] { server.run(); });
  {
    // A frame announcing 1 MiB: ZeroMQ closes the connection before buffering it; no reply, no crash.
    zmq::socket_t bad(context, zmq::socket_type::dealer);
    bad.set(zmq::sockopt::linger, 0);
    bad.connect(server.endpoint());
    const std::string header = "{}";
    std::vector<std::byte> huge(1 << 20, std::byte{1});
    bad.send(zmq::buffer(header), zmq::send_flags::sndmore);
    bad.send(zmq::buffer(huge), zmq::send_flags::none);
    zmq::pollitem_t item{bad.handle(), 0, ZMQ_POLLIN, 0};
    EXPECT_EQ(zmq::poll(&item, 1, std::chrono::milliseconds(500)), 0);
  }
  // A well-behaved sender is served afterwards.
  const Image image = source_image(5, 9);
  ReplayOptions replay_options;
  replay_options.address = server.endpoint();
  replay_options.speed = 0;
  const ReplayReport report = replay(image, replay_options, context);
  server.stop();
  thread.join();
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(core.stats().recorded, 5);
  EXPECT_EQ(core.stats().messages, 6);  // the oversized message never reached the core
}

TEST(FaultPlan, EveryIndexOnceAndReproducible) {
  FaultOptions f;
  f.drop = 0.2;
  f.reorder = 0.3;
  f.corrupt = 0.2;
  f.duplicate = 0.1;
  f.disconnect_after = 5;
  f.seed = 99;
  const auto a = plan_faults(0, 50, f);
  const auto b = plan_faults(0, 50, f);
  ASSERT_EQ(a.size(), 50u);
  std::set<int64_t> seen;
  int reconnects = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    seen.insert(a[i].index);
    EXPECT_EQ(a[i].index, b[i].index);
    EXPECT_EQ(a[i].tamper, b[i].tamper);
    EXPECT_LE(std::abs(a[i].index - static_cast<int64_t>(i)), 1);
    reconnects += a[i].reconnect_before;
  }
  EXPECT_EQ(seen.size(), 50u);
  EXPECT_EQ(reconnects, 1);
  EXPECT_TRUE(a[5].reconnect_before);
}

}  // namespace
}  // namespace rtf::sim
