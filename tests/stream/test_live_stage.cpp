// ctest-label: gpu
// LiveStage on its own (no network): a volume handed on before it was durable can come back when its recording
// failed and the sender resent it; the stage must take each (run, index) once. The latency record waits for the
// recorder's verdict (durable time, or failure as 0) but only after the volume's own work.
#include <gtest/gtest.h>

#include <thread>

#include "stream/pipeline/live_stage.hpp"
#include "stream/server/ingest_core.hpp"
#include "stream/server/latency_log.hpp"
#include "tests/support/stream_volumes.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_device.hpp"

namespace rtf::stream {
namespace {

AcceptedVolume make_volume(int64_t index, std::shared_ptr<RecordedStamp> stamp) {
  AcceptedVolume v = test::accepted(test::int16_volume(
      {}, index, [index](size_t i) { return static_cast<int16_t>(100 + index + 2 * static_cast<int64_t>(i)); }));
  v.written_ns = v.received_ns + 1;
  v.recorded = std::move(stamp);
  return v;
}

TEST(LiveStage, AVolumeResentAfterAFailedRecordingIsTakenOnce) {
  test::TempDir tmp;
  DropOldestQueue<AcceptedVolume> queue(8);
  LatencyLog latency("");
  const PipelineConfig config = upload_only_config(tmp.path(), 4);
  LiveStage stage(test::test_device(), config, queue, latency, tmp.path(), nullptr);

  auto failed = std::make_shared<RecordedStamp>();
  failed->set(-1);  // its recording failed: NACKed, so the sender sends it again
  const AcceptedVolume first = make_volume(0, failed);
  stage.handle(live_volume(first), true);
  auto durable = std::make_shared<RecordedStamp>();
  const AcceptedVolume again = make_volume(0, durable);
  const int64_t durable_at = again.written_ns + 5;
  durable->set(durable_at);
  stage.handle(live_volume(again), true);
  const AcceptedVolume next = make_volume(1, durable);
  stage.handle(live_volume(next), true);

  EXPECT_EQ(stage.counters().uploaded, 2);
  EXPECT_EQ(stage.counters().analysed, 2);
  const auto records = latency.records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].index, 0);
  EXPECT_EQ(records[0].recorded_ns, 0);  // failure: no durable time
  EXPECT_EQ(records[1].index, 1);
  EXPECT_EQ(records[1].recorded_ns, durable_at);
}

TEST(LiveStage, VolumesWaitingBehindANewerOneAreSkippedAndListed) {
  test::TempDir tmp;
  DropOldestQueue<AcceptedVolume> queue(8);
  LatencyLog latency("");
  LiveStage stage(test::test_device(), upload_only_config(tmp.path(), 4), queue, latency, tmp.path(), nullptr);
  auto durable = std::make_shared<RecordedStamp>();
  durable->set(1);
  for (int64_t i = 0; i < 5; ++i) ASSERT_TRUE(queue.push(make_volume(i, durable)));
  queue.close();
  stage.run();  // all five wait together: four are uploaded and skipped, the newest is analysed
  EXPECT_EQ(stage.counters().uploaded, 5);
  EXPECT_EQ(stage.counters().analysed, 1);
  EXPECT_EQ(stage.counters().skipped, 4);
  const auto skipped = stage.skipped_volumes();
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped.at("r"), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(FormatIndexRanges, SortedRuns) {
  EXPECT_EQ(format_index_ranges({}), "");
  EXPECT_EQ(format_index_ranges({4}), "4");
  EXPECT_EQ(format_index_ranges({3, 1, 2, 9, 12, 13, 13}), "1-3, 9, 12-13");
}

TEST(RecordedStamp, WaitBlocksUntilTheIngestThreadSetsIt) {
  RecordedStamp stamp;
  std::thread ingest([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stamp.set(1234);
  });
  EXPECT_EQ(stamp.recorded_ns(), 1234);
  ingest.join();
  RecordedStamp failed;
  failed.set(-1);
  EXPECT_EQ(failed.wait(), -1);
  EXPECT_EQ(failed.recorded_ns(), 0);
}

}  // namespace
}  // namespace rtf::stream
