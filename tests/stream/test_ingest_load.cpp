// ctest-label: e2e
// Load test of the whole ingest path (issue 3): 2,000 volumes of 64x64x33 int16 sent at 20x real time (TR 1 s, so
// one volume every 50 ms) over loopback ZeroMQ to the server, recorded with fsync per volume and uploaded into the
// device ring buffer; none may be lost or duplicated, and every one reaches the device. Prints the latency summary.
// Nothing asserted depends on the machine's speed: the sender resends only after a very long silence (no loss is
// injected here, so a resend would only measure a slow disk), and the device stage's queue holds the whole run (a busy
// machine may make the upload stage lag; dropping for it is tested elsewhere). How fast ingest is: bench_ingest.
// Set RTFMRI_LOAD_VOLUMES to run fewer volumes while developing (the default is the 2,000).
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <set>
#include <thread>

#include "sim/replay/replay.hpp"
#include "stream/pipeline/live_stage.hpp"
#include "stream/recording/journal.hpp"
#include "stream/server/ingest_core.hpp"
#include "stream/server/latency_log.hpp"
#include "stream/server/zmq_ingest_server.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_device.hpp"

namespace rtf::sim {
namespace {

int64_t load_volumes() {
  const char* env = std::getenv("RTFMRI_LOAD_VOLUMES");
  return env != nullptr ? std::max<int64_t>(1, std::atoll(env)) : 2000;
}

TEST(IngestLoad, TwoThousandVolumesAtTwentyTimesRealTimeNoneLostOrDuplicated) {
  const int64_t volumes = load_volumes();
  // A repeating set of 16 distinct random volumes keeps memory small while every payload differs from its neighbours.
  ImageHeader h;
  h.dims = {64, 64, 33};
  h.num_volumes = volumes;
  h.voxel_mm = {3.0, 3.0, 3.0};
  h.affine.diagonal() << 3.0, 3.0, 3.0, 1.0;
  h.tr_s = 1.0;
  h.source_type = DataType::kInt16;
  Image image(h);
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> d(0, 4000);
  const size_t per_volume = static_cast<size_t>(h.voxels_per_volume());
  for (size_t i = 0; i < 16 * per_volume && i < image.data().size(); ++i) image.data()[i] = static_cast<float>(d(rng));
  for (size_t i = 16 * per_volume; i < image.data().size(); ++i) image.data()[i] = image.data()[i - 16 * per_volume];
  for (int64_t t = 0; t < volumes; ++t) image.volume(t)[0] = static_cast<float>(t % 30000);  // unique volumes

  test::TempDir tmp;
  stream::IngestOptions ingest;
  ingest.queue_capacity = static_cast<size_t>(volumes);
  stream::IngestCore core(tmp.path(), ingest);
  stream::LatencyLog latency(tmp.path() / "latency.jsonl");
  zmq::context_t context(1);
  stream::ZmqServerOptions server_options;
  server_options.address = "tcp://127.0.0.1:*";
  stream::ZmqIngestServer server(context, core, server_options);
  stream::LiveStage upload(test::test_device(), stream::upload_only_config(tmp.path(), 64), core.queue(), latency,
                           tmp.path(), nullptr);
  std::thread upload_thread([&] { upload.run(); });
  std::thread server_thread([&] { server.run(); });

  ReplayOptions options;
  options.address = server.endpoint();
  options.speed = 20;
  options.session = "load";
  options.resend_timeout_s = 600;
  options.finish_timeout_s = 600;
  const ReplayReport report = replay(image, options, context);
  server.stop();
  server_thread.join();
  core.queue().close();
  upload_thread.join();

  ASSERT_TRUE(report.ok()) << (report.failures.empty() ? "" : report.failures.front());
  EXPECT_EQ(report.stats.acked, volumes);
  EXPECT_EQ(report.stats.nacks, 0);
  const stream::IngestStats stats = core.stats();
  EXPECT_EQ(stats.recorded, volumes);
  EXPECT_EQ(stats.duplicates, 0);
  EXPECT_EQ(upload.counters().uploaded, volumes);  // every volume reaches the device ring
  EXPECT_EQ(stats.queue_dropped, 0);
  EXPECT_EQ(upload.counters().failed, 0);
  const auto journal = stream::read_journal(tmp.path() / "runs" / "run-01" / "journal.jsonl");
  std::set<int64_t> indices;
  for (const auto& e : journal.entries) indices.insert(e.index);
  EXPECT_EQ(journal.entries.size(), static_cast<size_t>(volumes));
  EXPECT_EQ(indices.size(), static_cast<size_t>(volumes));
  EXPECT_EQ(*indices.rbegin(), volumes - 1);
  // The pacer never sends ahead of the schedule (how far behind a busy machine falls is not this test's business).
  EXPECT_GE(report.seconds, static_cast<double>(volumes - 1) * 0.05);
  std::printf("%lld volumes in %.1f s\n%s", static_cast<long long>(volumes), report.seconds, latency.summary().c_str());
}

}  // namespace
}  // namespace rtf::sim
