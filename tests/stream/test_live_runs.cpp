// ctest-label: gpu
// ctest-properties: PROCESSORS 2 (the whole live pipeline on PoCL, several runs)
// Several runs at once through one LiveStage: each analysed run has its own pipeline, so volumes of several runs,
// interleaved in any order, give each run exactly the results it gets alone (motion, feedback, every map, bit for
// bit); runs beyond max_live_runs are recorded only and say so; a run closed by its END_OF_RUN or idle for
// live_run_idle_s gives its place to the next run. Paced by the stage's own progress and an injected clock.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "sim/phantom/phantom.hpp"
#include "stream/pipeline/live_outputs.hpp"
#include "stream/pipeline/live_stage.hpp"
#include "stream/server/ingest_core.hpp"
#include "stream/server/latency_log.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/stream_volumes.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_device.hpp"

namespace rtf::stream {
namespace {

constexpr int64_t kVolumes = 14;

// A run as the scanner sends it: int16 volumes of a small phantom (30x36x24 at 5 mm), its own motion and noise.
struct ScannerRun {
  std::string name;
  ImageHeader grid;
  std::vector<std::vector<int16_t>> volumes;
};

ScannerRun make_run(const std::string& name, uint64_t seed) {
  sim::PhantomSpec spec;
  spec.template_path = *test::installed_data("mricron/ch2bet.nii.gz");
  spec.grid = {30, 36, 24};
  spec.voxel_mm = {5.0, 5.0, 5.0};
  spec.volumes = kVolumes;
  spec.tr_s = 1.0;
  spec.block_on_s = 4.0;
  spec.block_off_s = 4.0;
  spec.psc = 5.0;
  spec.max_translation_mm = 2.0;
  spec.max_rotation_deg = 2.0;
  spec.seed = seed;
  const Image bold = sim::make_phantom(spec).bold;
  ScannerRun run{name, bold.header(), {}};
  run.grid.num_volumes = 1;
  run.grid.source_type = DataType::kInt16;
  for (int64_t t = 0; t < bold.nt(); ++t) {
    std::vector<int16_t> samples;
    for (float v : bold.volume(t)) samples.push_back(static_cast<int16_t>(std::lround(v)));
    run.volumes.push_back(std::move(samples));
  }
  return run;
}

LiveVolume volume_of(const ScannerRun& run, int64_t t) {
  LiveVolume v;
  v.run = run.name;
  v.index = t;
  v.grid = run.grid;
  v.type = DataType::kInt16;
  v.payload = std::as_bytes(std::span<const int16_t>(run.volumes[static_cast<size_t>(t)]));
  return v;
}

// Every stage on: motion, smoothing, cumulative and sliding GLM, CCA, the AAL connectivity, a seed map and the
// feedback value of an MNI sphere.
PipelineConfig full_config(const std::filesystem::path& session, const std::filesystem::path& events) {
  {
    std::ofstream out(events);
    out << "onset\tduration\ttrial_type\n";
    for (int onset = 0; onset < kVolumes; onset += 8) out << onset << "\t4\ttask\n";
  }
  PipelineConfig c;
  c.session_dir = session.string();
  c.ring = 12;
  c.tr_s = 1.0;
  c.volumes = kVolumes;
  c.events = events.string();
  c.glm_window = 8;
  c.cca_window = 8;
  c.connectivity_window = 8;
  c.data_dir = test::installed_data_dir();
  RoiSpec m1;
  m1.name = "M1_L";
  m1.sphere_mm = std::array<double, 3>{-38.0, -24.0, 56.0};
  m1.radius_mm = 10.0;
  c.feedback_rois = {m1};
  c.seed = m1;
  c.results_pub.clear();
  c.feedback_tcp.clear();
  return c;
}

// What a run's results are, per volume, for an exact comparison.
using Results = std::map<int64_t, TrResult>;

// Bit-for-bit equality of two float vectors (NaN equals NaN where both are NaN).
bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void expect_same_results(const Results& alone, const Results& together, const std::string& run) {
  ASSERT_EQ(alone.size(), together.size()) << run;
  for (const auto& [index, a] : alone) {
    SCOPED_TRACE(run + " volume " + std::to_string(index));
    ASSERT_EQ(together.count(index), 1u);
    const TrResult& b = together.at(index);
    ASSERT_EQ(a.motion.has_value(), b.motion.has_value());
    if (a.motion) {
      EXPECT_EQ(a.motion->params.translation_mm, b.motion->params.translation_mm);
      EXPECT_EQ(a.motion->params.rotation_deg, b.motion->params.rotation_deg);
      EXPECT_EQ(std::isnan(a.motion->fd_mm), std::isnan(b.motion->fd_mm));
      if (!std::isnan(a.motion->fd_mm)) {
        EXPECT_EQ(a.motion->fd_mm, b.motion->fd_mm);
      }
    }
    ASSERT_EQ(a.feedback.has_value(), b.feedback.has_value());
    if (a.feedback) {
      EXPECT_EQ(a.feedback->status, b.feedback->status);
      if (std::isfinite(a.feedback->value)) {
        EXPECT_EQ(a.feedback->value, b.feedback->value);
      }
    }
    EXPECT_EQ(a.roi_means.size(), b.roi_means.size());
    for (size_t i = 0; i < a.roi_means.size() && i < b.roi_means.size(); ++i) {
      if (std::isfinite(a.roi_means[i])) {
        EXPECT_EQ(a.roi_means[i], b.roi_means[i]);
      }
    }
    EXPECT_TRUE(same_floats(a.volume, b.volume)) << "motion-corrected volume";
    EXPECT_TRUE(same_floats(a.t_map, b.t_map)) << "cumulative t";
    EXPECT_TRUE(same_floats(a.sliding_t_map, b.sliding_t_map)) << "sliding t";
    EXPECT_TRUE(same_floats(a.cca_map, b.cca_map)) << "CCA";
    EXPECT_TRUE(same_floats(a.seed_map, b.seed_map)) << "seed";
    EXPECT_TRUE(same_floats(a.connectivity, b.connectivity)) << "ROI x ROI";
    EXPECT_EQ(a.stage_errors, b.stage_errors);
  }
}

// One stage; `order` lists (run, volume) in the order handed in, each analysed (as replay and a lockstep sender do).
std::map<std::string, Results> run_stage(const PipelineConfig& config, const std::filesystem::path& session,
                                         const std::vector<std::pair<const ScannerRun*, int64_t>>& order,
                                         LiveStageCounters* counters = nullptr) {
  std::map<std::string, Results> out;
  DropOldestQueue<AcceptedVolume> unused(1);
  LatencyLog latency("");
  LiveStage stage(test::test_device(), config, unused, latency, session, nullptr,
                  [&](const TrResult& r) { out[r.run][r.index] = r; });
  for (const auto& [run, t] : order) stage.handle(volume_of(*run, t), true);
  stage.finish_run();
  if (counters != nullptr) *counters = stage.counters();
  return out;
}

#define SKIP_WITHOUT_DATA()                                                                          \
  if (!test::installed_data("mricron/ch2bet.nii.gz") || !test::installed_data("mricron/aal.nii.gz")) \
  GTEST_SKIP() << test::missing_installed_data("mricron/ch2bet.nii.gz and aal.nii.gz")

TEST(LiveRuns, InterleavedRunsEachGetExactlyTheAnalysisTheyGetAlone) {
  SKIP_WITHOUT_DATA();
  test::TempDir tmp;
  const PipelineConfig config = full_config(tmp.path() / "alone", tmp.path() / "events.tsv");
  const ScannerRun a = make_run("twoA", 11), b = make_run("twoB", 12);
  std::vector<std::pair<const ScannerRun*, int64_t>> only_a, only_b, mixed;
  for (int64_t t = 0; t < kVolumes; ++t) only_a.emplace_back(&a, t);
  for (int64_t t = 0; t < kVolumes; ++t) only_b.emplace_back(&b, t);
  // B starts while A is at volume 3; then a random interleaving (fixed seed: the order is printed on failure).
  std::mt19937 rng(5);
  int64_t next_a = 0, next_b = 0;
  while (next_a < kVolumes || next_b < kVolumes) {
    const bool take_a = next_b >= kVolumes || (next_a < kVolumes && (next_a < 3 || rng() % 2 == 0));
    if (take_a) {
      mixed.emplace_back(&a, next_a++);
    } else {
      mixed.emplace_back(&b, next_b++);
    }
  }
  const auto alone_a = run_stage(config, tmp.path() / "alone_a", only_a);
  const auto alone_b = run_stage(config, tmp.path() / "alone_b", only_b);
  LiveStageCounters counters;
  const auto together = run_stage(config, tmp.path() / "together", mixed, &counters);
  EXPECT_EQ(counters.runs, 2);
  EXPECT_EQ(counters.analysed, 2 * kVolumes);
  EXPECT_EQ(counters.not_analysed, 0);
  ASSERT_EQ(together.size(), 2u);
  // The runs' motion differs (else the comparison could not tell them apart).
  EXPECT_NE(alone_a.at("twoA").at(5).motion->params.translation_mm,
            alone_b.at("twoB").at(5).motion->params.translation_mm);
  expect_same_results(alone_a.at("twoA"), together.at("twoA"), "twoA");
  expect_same_results(alone_b.at("twoB"), together.at("twoB"), "twoB");
  // Each run's files are its own: motion.tsv equal to the run's alone.
  for (const std::string run : {"twoA", "twoB"}) {
    auto read = [](const std::filesystem::path& p) {
      std::ifstream in(p);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    const std::string alone = read(tmp.path() / (run == "twoA" ? "alone_a" : "alone_b") / "runs" / run / "motion.tsv");
    EXPECT_FALSE(alone.empty());
    EXPECT_EQ(alone, read(tmp.path() / "together" / "runs" / run / "motion.tsv")) << run;
  }
}

TEST(LiveRuns, RunsBeyondTheLimitAreRecordedOnlyAndTheAnalysedRunIsUntouched) {
  SKIP_WITHOUT_DATA();
  test::TempDir tmp;
  PipelineConfig config = full_config(tmp.path() / "alone", tmp.path() / "events.tsv");
  config.max_live_runs = 1;
  const ScannerRun scan = make_run("scan", 21);
  // A flood: 25 other runs' valid volumes between every two of the scan's (one phantom's volumes, renamed).
  std::vector<ScannerRun> flood;
  const ScannerRun other = make_run("other", 22);
  for (int i = 0; i < 25; ++i) {
    ScannerRun r = other;
    r.name = "flood" + std::to_string(i);
    flood.push_back(std::move(r));
  }
  std::vector<std::pair<const ScannerRun*, int64_t>> only_scan, stormy;
  for (int64_t t = 0; t < kVolumes; ++t) {
    only_scan.emplace_back(&scan, t);
    stormy.emplace_back(&scan, t);
    for (const ScannerRun& f : flood) stormy.emplace_back(&f, t);
  }
  const auto alone = run_stage(config, tmp.path() / "alone", only_scan);
  std::map<std::string, Results> together;
  DropOldestQueue<AcceptedVolume> unused(1);
  LatencyLog latency("");
  LiveStage stage(test::test_device(), config, unused, latency, tmp.path() / "stormy", nullptr,
                  [&](const TrResult& r) { together[r.run][r.index] = r; });
  for (const auto& [run, t] : stormy) stage.handle(volume_of(*run, t), true);
  const auto not_analysed = stage.not_analysed_runs();
  stage.finish_run();
  ASSERT_EQ(together.size(), 1u) << "only the first run has a pipeline";
  expect_same_results(alone.at("scan"), together.at("scan"), "scan");
  EXPECT_EQ(stage.counters().runs, 1);
  EXPECT_EQ(stage.counters().not_analysed, 25 * kVolumes);
  ASSERT_EQ(not_analysed.size(), 25u);
  for (const auto& [run, n] : not_analysed) {
    EXPECT_EQ(n.volumes, kVolumes) << run;
    EXPECT_NE(n.reason.find("max_live_runs 1"), std::string::npos) << n.reason;
    EXPECT_NE(n.reason.find("scan"), std::string::npos) << n.reason;  // which run holds the place
  }
  // The line a client of such a run gets: no value, status recorded-only, the reason.
  const nlohmann::json line = not_analysed_json("flood3", 4, not_analysed.at("flood3").reason, IngestLatency{});
  EXPECT_EQ(line["run"], "flood3");
  EXPECT_EQ(line["volume"], 4);
  EXPECT_EQ(line["status"], "recorded-only");
  EXPECT_TRUE(line["feedback"].is_null());
  EXPECT_EQ(line["reason"], not_analysed.at("flood3").reason);
}

// Every byte 1.
AcceptedVolume accepted(const std::string& run, int64_t index) {
  test::VolumeSpec spec;
  spec.run = run;
  return test::accepted(test::int16_volume(spec, index, [](size_t) { return int16_t{0x0101}; }));
}

TEST(LiveRuns, AnIdleRunGivesItsPlaceAndItsLaterVolumesAreRecordedOnly) {
  test::TempDir tmp;
  PipelineConfig config = upload_only_config(tmp.path(), 4);
  config.max_live_runs = 1;
  config.live_run_idle_s = 60.0;
  DropOldestQueue<AcceptedVolume> unused(1);
  LatencyLog latency("");
  LiveStage stage(test::test_device(), config, unused, latency, tmp.path(), nullptr);
  int64_t now = 0;
  stage.set_clock([&now] { return now; });
  const AcceptedVolume a0 = accepted("a", 0), b0 = accepted("b", 0), c0 = accepted("c", 0), a1 = accepted("a", 1),
                       b1 = accepted("b", 1), c1 = accepted("c", 1);
  stage.handle(live_volume(a0), true);
  now += 59'000'000'000;  // 59 s: a is still busy
  stage.handle(live_volume(b0), true);
  EXPECT_EQ(stage.live_runs(), std::vector<std::string>{"a"});
  now += 2'000'000'000;  // a has had no volume for 61 s
  stage.handle(live_volume(c0), true);
  EXPECT_EQ(stage.live_runs(), std::vector<std::string>{"c"});
  stage.handle(live_volume(a1), true);  // a's analysis ended: recorded only from now on
  stage.handle(live_volume(b1), true);  // b stays recorded only, although a place was freed after it started
  stage.handle(live_volume(c1), true);
  EXPECT_EQ(stage.counters().analysed, 3);      // a0, c0, c1
  EXPECT_EQ(stage.counters().not_analysed, 3);  // b0, a1, b1
  const auto not_analysed = stage.not_analysed_runs();
  ASSERT_EQ(not_analysed.size(), 2u);
  EXPECT_EQ(not_analysed.at("b").volumes, 2);
  EXPECT_EQ(not_analysed.at("a").volumes, 1);
  EXPECT_NE(not_analysed.at("a").reason.find("no volume for 61 s"), std::string::npos) << not_analysed.at("a").reason;
}

// Volumes of two runs waiting together: each run's newest is analysed (the others uploaded and skipped), both runs'
// results come out.
TEST(LiveRuns, WaitingVolumesOfTwoRunsAnalyseTheNewestOfEach) {
  test::TempDir tmp;
  DropOldestQueue<AcceptedVolume> queue(16);
  LatencyLog latency("");
  std::vector<std::pair<std::string, int64_t>> seen;
  LiveStage stage(test::test_device(), upload_only_config(tmp.path(), 4), queue, latency, tmp.path(), nullptr,
                  [&](const TrResult& r) { seen.emplace_back(r.run, r.index); });
  for (int64_t i = 0; i < 3; ++i) {
    queue.push(accepted("a", i));
    queue.push(accepted("b", i));
  }
  queue.close();
  stage.run();
  EXPECT_EQ(stage.counters().uploaded, 6);
  EXPECT_EQ(stage.counters().analysed, 2);
  EXPECT_EQ(stage.counters().skipped, 4);
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, int64_t>>{{"a", 2}, {"b", 2}}));
  EXPECT_EQ(stage.skipped_volumes().at("a"), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(stage.skipped_volumes().at("b"), (std::vector<int64_t>{0, 1}));
}

// A run closed by its END_OF_RUN gives its place at once (run(): the stage asks IngestCore::run_ended), and only after
// every volume handed in before the END_OF_RUN was handled.
TEST(LiveRuns, ARunClosedByItsEndOfRunGivesItsPlaceAfterItsLastVolume) {
  test::TempDir tmp;
  PipelineConfig config = upload_only_config(tmp.path(), 4);
  config.max_live_runs = 1;
  DropOldestQueue<AcceptedVolume> queue(16);
  LatencyLog latency("");
  LiveStage stage(test::test_device(), config, queue, latency, tmp.path(), nullptr);
  std::atomic<bool> a_ended{false};
  stage.set_run_ended([&](const std::string& run) { return run == "a" && a_ended.load(); });
  std::thread consumer([&] { stage.run(); });
  for (int64_t i = 0; i < 3; ++i) queue.push(accepted("a", i));
  EXPECT_TRUE(test::eventually([&] { return stage.counters().received == 3; }));
  // A volume of a already queued when its END_OF_RUN arrives is still analysed as a's.
  queue.push(accepted("a", 3));
  a_ended = true;
  EXPECT_TRUE(test::eventually([&] { return stage.live_runs().empty(); }));
  queue.push(accepted("b", 0));
  EXPECT_TRUE(test::eventually([&] { return stage.counters().received == 5; }));
  queue.close();
  consumer.join();
  EXPECT_EQ(stage.counters().runs, 2);
  EXPECT_EQ(stage.counters().uploaded, 5);
  EXPECT_EQ(stage.counters().not_analysed, 0);
  EXPECT_TRUE(stage.not_analysed_runs().empty());
}

}  // namespace
}  // namespace rtf::stream
