// ctest-label: e2e
// ctest-properties: PROCESSORS 2  (a server with every live stage on PoCL: let it have the cores)
// The live server end to end, in one process: phantom volumes (Colin27, realistic motion, a 10 s on/off block design
// activating left M1) replayed over ZeroMQ to the ingest server, recorded, and run through the live pipeline with
// every stage on; a TCP client reads the feedback lines and a SUB socket the results stream. The sender runs in
// lockstep with the server (each volume after the previous one's results arrived), so nothing here depends on the
// machine's speed or on what else runs beside the test; only the falling-behind case is paced by the clock, and its
// delay is injected so large that any machine falls behind.
// - The results stream's headers carry what a viewer needs: the design's columns and this volume's row, the task
//   conditions, the atlas regions naming the connectivity matrix's rows, the device, and the counters (received,
//   analysed, skipped, dropped, duplicates, missing) that agree with the stage's and ingest's own.
// - Every volume is analysed and yields one feedback line with its latency, and the feedback value (PSC in the
// activated
//   ROI) is higher in the task blocks than at rest; the final maps are written and the cumulative t-map is high in
//   the activated region.
// - Processing made slower than the data (an injected delay): every volume is still recorded and uploaded, volumes
//   are skipped, and the stage catches up: the last volume is analysed and its feedback sent.
// - `replay` of the recorded session equals the live run within float tolerance.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "core/design/design_matrix.hpp"
#include "core/design/events.hpp"
#include "core/io/nifti_io.hpp"
#include "sim/phantom/phantom.hpp"
#include "sim/replay/replay.hpp"
#include "stream/output/zmq_connection_monitor.hpp"
#include "stream/pipeline/live_stage.hpp"
#include "stream/pipeline/session_replay.hpp"
#include "stream/server/ingest_core.hpp"
#include "stream/server/zmq_ingest_server.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_device.hpp"

namespace rtf::stream {
namespace {

struct Fixture {
  sim::PhantomResult phantom;
  std::filesystem::path events;
};

// A small phantom (40x48x30 at 4 mm keeps PoCL fast): 48 volumes, TR 1 s, 10 s blocks, 5% peak change in grey matter.
Fixture make_fixture(const std::filesystem::path& dir) {
  sim::PhantomSpec spec;
  spec.template_path = *test::installed_data("mricron/ch2bet.nii.gz");
  spec.grid = {40, 48, 30};
  spec.voxel_mm = {4.0, 4.0, 4.0};
  spec.volumes = 48;
  spec.tr_s = 1.0;
  spec.block_on_s = 10.0;
  spec.block_off_s = 10.0;
  spec.psc = 5.0;
  spec.seed = 8;
  Fixture f{sim::make_phantom(spec), dir / "events.tsv"};
  for (float& v : f.phantom.bold.data()) v = std::round(v);  // a scanner sends integers
  f.phantom.bold.header().source_type = DataType::kInt16;
  std::ofstream events(f.events);
  events << "onset\tduration\ttrial_type\n";
  for (const sim::Event& e : f.phantom.spec.events) events << e.onset_s << "\t" << e.duration_s << "\ttask\n";
  return f;
}

PipelineConfig config_for(const Fixture& f, const std::filesystem::path& session) {
  PipelineConfig c;
  c.session_dir = session.string();
  c.ring = 24;
  c.tr_s = 1.0;
  c.volumes = f.phantom.bold.nt();
  c.events = f.events.string();
  c.glm_window = 16;
  c.cca_window = 16;
  c.connectivity_window = 16;
  c.data_dir = test::installed_data_dir();
  RoiSpec m1;
  m1.name = "M1_L";
  m1.sphere_mm = std::array<double, 3>{-38.0, -24.0, 56.0};
  m1.radius_mm = 8.0;
  c.feedback_rois = {m1};
  RoiSpec seed = m1;
  c.seed = seed;
  c.results_pub = "tcp://127.0.0.1:*";
  c.feedback_tcp = "127.0.0.1:0";
  return c;
}

// Collects the feedback lines of a TCP server on 127.0.0.1:port until the server closes.
class LineReader {
 public:
  explicit LineReader(uint16_t port) {
    thread_ = std::thread([this, port] {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(port);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return;
      connected_ = true;
      std::string pending;
      char buf[65536];
      ssize_t r;
      while ((r = ::recv(fd, buf, sizeof(buf), 0)) > 0) {
        pending.append(buf, static_cast<size_t>(r));
        size_t nl;
        while ((nl = pending.find('\n')) != std::string::npos) {
          lines_.push_back(nlohmann::json::parse(pending.substr(0, nl)));
          pending.erase(0, nl + 1);
        }
      }
      ::close(fd);
    });
  }
  std::vector<nlohmann::json> join() {
    thread_.join();
    return lines_;
  }
  bool connected() const { return connected_; }

 private:
  std::thread thread_;
  std::vector<nlohmann::json> lines_;
  std::atomic<bool> connected_{false};
};

struct LiveRun {
  sim::ReplayReport report;
  LiveStageCounters counters;
  std::vector<nlohmann::json> lines;
  int64_t pub_messages = 0;
  std::vector<nlohmann::json> pub_headers;  // every received PUB message's JSON header, in order
  IngestStats ingest;
};

// Runs the phantom through the server. `lockstep`: each volume is sent only after the stage finished the one before and
// its PUB message arrived (the server never has two volumes waiting, so every volume is analysed on any machine, busy
// or not); otherwise one volume every `seconds_per_volume` s. The SUB and TCP clients are connected before the first
// volume, so they see every message.
// `prepare` (optional) sees the stage before it starts; `pace` (optional, lockstep only) must also hold before the
// volume after `previous` is sent.
LiveRun run_live(const Fixture& f, const PipelineConfig& config, bool lockstep, double seconds_per_volume, int delay_ms,
                 const std::function<void(LiveStage&)>& prepare = {},
                 const std::function<bool(LiveStage&, int64_t previous)>& pace = {}) {
  LiveRun out;
  IngestCore core(config.session_dir);
  LatencyLog latency(std::filesystem::path(config.session_dir) / "latency.jsonl");
  zmq::context_t context(1);
  ZmqServerOptions server_options;
  server_options.address = "tcp://127.0.0.1:*";
  ZmqIngestServer server(context, core, server_options);
  LiveOutputs outputs(context, config);
  zmq::socket_t sub(context, zmq::socket_type::sub);
  ZmqConnectionMonitor sub_connection(context, sub);
  sub.set(zmq::sockopt::subscribe, kResultTopic);
  sub.set(zmq::sockopt::rcvtimeo, 50);
  sub.connect(outputs.publisher()->endpoint());
  EXPECT_TRUE(sub_connection.wait_connected(test::kPatience)) << "the SUB socket never connected";
  LineReader reader(outputs.tcp()->port());
  EXPECT_TRUE(test::eventually([&] { return outputs.tcp()->counters().clients == 1; }))
      << "the feedback client never connected";
  LiveStage stage(test::test_device(), config, core.queue(), latency, config.session_dir, &outputs);
  stage.set_ingest_stats([&core] { return core.quick_stats(); });
  stage.set_injected_delay(std::chrono::milliseconds(delay_ms));
  if (prepare) prepare(stage);
  std::thread stage_thread([&] { stage.run(); });
  std::thread server_thread([&] { server.run(); });
  std::atomic<bool> subscribed{true};
  std::atomic<int64_t> pub_messages{0};
  std::thread sub_thread([&] {
    zmq::message_t m;
    int part = 0;  // within the current message: 0 topic, 1 header, then the binary frames
    while (subscribed) {
      while (sub.recv(m)) {
        if (part == 1) out.pub_headers.push_back(nlohmann::json::parse(m.to_string_view()));
        ++part;
        if (!m.more()) {
          pub_messages.fetch_add(1);
          part = 0;
        }
      }
    }
  });
  sim::ReplayOptions options;
  options.address = server.endpoint();
  options.tr_s = lockstep ? 1.0 : seconds_per_volume;
  options.speed = lockstep ? 0.0 : 1.0;
  options.finish_timeout_s = 300;
  options.resend_timeout_s = 600;  // nothing is lost on loopback: a resend would only count a slow disk as a duplicate
  if (lockstep) {
    options.handled = [&](int64_t previous) {
      const LiveStageCounters c = stage.counters();
      return c.analysed + c.skipped + c.failed > previous && pub_messages.load() >= c.analysed &&
             (!pace || pace(stage, previous));
    };
  }
  out.report = sim::replay(f.phantom.bold, options, context);
  server.stop();
  server_thread.join();
  core.queue().close();
  stage_thread.join();  // the stage handles every queued volume before it returns
  out.counters = stage.counters();
  EXPECT_TRUE(test::eventually([&] { return pub_messages.load() >= out.counters.analysed; }))
      << pub_messages.load() << " PUB messages for " << out.counters.analysed << " analysed volumes";
  subscribed = false;
  sub_thread.join();
  out.pub_messages = pub_messages.load();
  outputs.stop();
  out.lines = reader.join();
  out.ingest = core.stats();
  return out;
}

std::vector<std::vector<std::string>> read_tsv(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> row;
    std::istringstream s(line);
    std::string field;
    while (std::getline(s, field, '\t')) row.push_back(field);
    rows.push_back(row);
  }
  return rows;
}

// Rows `first_row`.. of two tsv files agree: numbers within 1e-6 relative (floor 1e-6), text exactly.
void expect_same_rows(const std::filesystem::path& file_a, const std::filesystem::path& file_b, size_t first_row) {
  const auto a = read_tsv(file_a);
  const auto b = read_tsv(file_b);
  const std::string file = file_a.filename().string();
  ASSERT_EQ(a.size(), b.size()) << file;
  for (size_t r = first_row; r < a.size(); ++r) {
    ASSERT_EQ(a[r].size(), b[r].size()) << file << " row " << r;
    for (size_t c = 0; c < a[r].size(); ++c) {
      char* end = nullptr;
      const double x = std::strtod(a[r][c].c_str(), &end);
      if (end == a[r][c].c_str()) {
        EXPECT_EQ(a[r][c], b[r][c]) << file << " row " << r << " column " << c;
        continue;
      }
      const double y = std::strtod(b[r][c].c_str(), nullptr);
      EXPECT_NEAR(x, y, 1e-6 * std::max(std::abs(x), 1.0)) << file << " row " << r << " column " << c;
    }
  }
}

#define SKIP_WITHOUT_DATA()                                                                          \
  if (!test::installed_data("mricron/ch2bet.nii.gz") || !test::installed_data("mricron/aal.nii.gz")) \
  GTEST_SKIP() << test::missing_installed_data("mricron/ch2bet.nii.gz and aal.nii.gz")

TEST(LivePipeline, PhantomThroughTheServerGivesFeedbackMapsAndLatency) {
  SKIP_WITHOUT_DATA();
  test::TempDir tmp;
  const Fixture f = make_fixture(tmp.path());
  const PipelineConfig config = config_for(f, tmp.path() / "session");
  // In lockstep with the server: every volume is analysed, whatever the machine's speed or load (a cold kernel cache
  // only makes the first volume wait longer).
  const LiveRun live = run_live(f, config, true, 0.0, 0);
  ASSERT_TRUE(live.report.ok());
  EXPECT_EQ(live.ingest.recorded, 48);
  EXPECT_EQ(live.counters.uploaded, 48);
  EXPECT_EQ(live.counters.failed, 0);
  EXPECT_EQ(live.counters.analysed, 48);
  EXPECT_EQ(live.counters.skipped, 0);
  // One feedback line and one PUB message per analysed volume (both clients were connected before the first).
  EXPECT_EQ(static_cast<int64_t>(live.lines.size()), 48);
  EXPECT_EQ(live.pub_messages, 48);
  // The results stream's headers: design row, conditions, regions of the connectivity matrix, device, counters.
  ASSERT_EQ(static_cast<int64_t>(live.pub_headers.size()), live.pub_messages);
  ASSERT_FALSE(live.pub_headers.empty());
  // The design the run uses (TR 1 s, 48 scans, 128 s cosine high-pass, the six motion columns that the GLM fills in
  // per TR from the motion stage).
  DesignOptions o;
  o.tr_s = 1.0;
  o.n_scans = 48;
  o.confounds = Eigen::MatrixXd::Zero(48, 6);
  o.confound_names = motion_confound_names();
  o.demean_confounds = false;
  const DesignMatrix design = build_design_matrix(read_events_tsv(f.events).events, o);
  const auto first_motion_column = static_cast<size_t>(*design.find("trans_x"));
  int64_t previous_received = 0;
  for (const auto& h : live.pub_headers) {
    SCOPED_TRACE(h["volume"].dump());
    const int64_t volume = h["volume"].get<int64_t>();
    ASSERT_TRUE(h.contains("design"));  // 48 volumes, all inside the design
    const auto& columns = h["design"]["columns"];
    const auto& row = h["design"]["row"];
    ASSERT_EQ(columns, nlohmann::json(design.names()));
    ASSERT_EQ(row.size(), columns.size());
    for (size_t j = 0; j < design.columns.size(); ++j) {
      // The motion columns hold this volume's motion (as the GLM sees them), the others the design matrix's row.
      const double expected =
          design.columns[j].kind == DesignColumn::Kind::kConfound
              ? h.value("motion", nlohmann::json::array({0, 0, 0, 0, 0, 0}))[j - first_motion_column].get<double>()
              : design.x(volume, static_cast<Eigen::Index>(j));
      EXPECT_NEAR(row[j].get<double>(), expected, 1e-9) << columns[j];
    }
    EXPECT_EQ(h["conditions"], nlohmann::json::array({"task"}));
    int64_t regions = -1;
    for (const auto& fr : h["frames"]) {
      if (fr["name"] == "connectivity") regions = fr["shape"][0].get<int64_t>();
    }
    ASSERT_GT(regions, 1);  // the AAL atlas is on
    ASSERT_TRUE(h["regions"].is_array());
    EXPECT_EQ(static_cast<int64_t>(h["regions"].size()), regions);
    EXPECT_EQ(h["regions"][0], "Precentral_L");  // AAL's first region
    EXPECT_TRUE(h["device"].is_string() && !h["device"].get<std::string>().empty());
    ASSERT_TRUE(h.contains("counters"));
    const auto& c = h["counters"];
    for (const char* k : {"received", "analysed", "skipped", "dropped", "duplicates", "missing"}) {
      ASSERT_TRUE(c.contains(k) && c[k].is_number_integer()) << k;
    }
    EXPECT_GE(c["received"].get<int64_t>(), c["analysed"].get<int64_t>() + c["skipped"].get<int64_t>());
    EXPECT_EQ(c["received"].get<int64_t>(), volume + 1);  // one run, in order, none lost
    EXPECT_EQ(c["analysed"].get<int64_t>(), volume + 1);  // none skipped (asserted below)
    EXPECT_EQ(c["missing"], 0);
    EXPECT_EQ(c["dropped"], 0);
    EXPECT_EQ(c["duplicates"], 0);
    EXPECT_GT(c["received"].get<int64_t>(), previous_received);
    previous_received = c["received"].get<int64_t>();
  }
  EXPECT_EQ(live.pub_headers.back()["volume"], 47);
  for (const auto& line : live.lines) {  // the feedback line stays small
    for (const char* k : {"design", "conditions", "regions", "device", "counters"}) EXPECT_FALSE(line.contains(k)) << k;
  }
  std::vector<double> task, rest;
  for (const auto& line : live.lines) {
    ASSERT_TRUE(line.contains("latency_ms") && line["latency_ms"].contains("end_to_end")) << line.dump();
    EXPECT_GT(line["latency_ms"]["end_to_end"].get<double>(), 0.0);
    EXPECT_TRUE(line.contains("motion") && line.contains("fd_mm"));
    if (line["feedback"].is_null()) continue;
    const std::string condition = line["condition"];
    (condition == "regulation" ? task : rest).push_back(line["feedback"].get<double>());
  }
  ASSERT_GE(task.size(), 5u);
  ASSERT_GE(rest.size(), 3u);
  const double task_mean = std::accumulate(task.begin(), task.end(), 0.0) / static_cast<double>(task.size());
  const double rest_mean = std::accumulate(rest.begin(), rest.end(), 0.0) / static_cast<double>(rest.size());
  std::printf("feedback: task mean %.3f (%zu TRs), rest mean %.3f (%zu TRs)\n", task_mean, task.size(), rest_mean,
              rest.size());
  // 5% peak change of pure grey matter, diluted by the ROI's other tissue and the 4 mm voxels: measured ~0.55 above
  // rest; the bound asks for half of that.
  EXPECT_GT(task_mean, rest_mean + 0.25);
  // The run's files: motion, feedback, final maps; the cumulative t-map is high where the phantom is active.
  const auto run_dir = tmp.path() / "session" / "runs" / "run-01";
  for (const char* file : {"motion.tsv", "feedback.tsv", "glm_cumulative_task_t.nii.gz", "cca.nii.gz",
                           "seed_cumulative_z.nii.gz", "connectivity_cumulative_r.tsv", "bold.nii.gz"}) {
    EXPECT_TRUE(std::filesystem::exists(run_dir / file)) << file;
  }
  const Image t = read_nifti(run_dir / "glm_cumulative_task_t.nii.gz");
  double active_t = 0.0;
  int64_t active = 0;
  for (size_t i = 0; i < t.data().size(); ++i) {
    if (f.phantom.activation_mask.data()[i] > 0.5f && std::isfinite(t.data()[i])) {
      active_t += t.data()[i];
      ++active;
    }
  }
  ASSERT_GT(active, 0);
  std::printf("cumulative t in the %lld activated voxels: mean %.2f\n", static_cast<long long>(active),
              active_t / static_cast<double>(active));
  EXPECT_GT(active_t / static_cast<double>(active), 3.1);
  EXPECT_TRUE(std::filesystem::exists(tmp.path() / "session" / "latency.jsonl"));

  // Replay of the recorded session equals the live run, which analysed every volume.
  PipelineConfig replay_config = config;
  replay_config.results_pub.clear();
  replay_config.feedback_tcp.clear();
  const auto replayed =
      replay_session(test::test_device(), replay_config, tmp.path() / "session", tmp.path() / "replay", nullptr);
  ASSERT_EQ(replayed.size(), 1u);
  EXPECT_EQ(replayed[0].volumes, 48);
  EXPECT_EQ(replayed[0].corrupt, 0);
  // Same data, same kernels, same order: the per-TR files agree to float tolerance (here: 1e-6 relative, floor 1e-6).
  for (const char* file : {"motion.tsv", "feedback.tsv"}) {
    expect_same_rows(tmp.path() / "session" / "runs" / "run-01" / file,
                     tmp.path() / "replay" / "runs" / "run-01" / file, 1);
  }
  const Image t_live = read_nifti(tmp.path() / "session" / "runs" / "run-01" / "glm_cumulative_task_t.nii.gz");
  const Image t_replay = read_nifti(tmp.path() / "replay" / "runs" / "run-01" / "glm_cumulative_task_t.nii.gz");
  ASSERT_EQ(t_live.data().size(), t_replay.data().size());
  double worst = 0.0;
  for (size_t i = 0; i < t_live.data().size(); ++i) {
    const double x = t_live.data()[i], y = t_replay.data()[i];
    if (std::isnan(x) || std::isnan(y)) {
      EXPECT_EQ(std::isnan(x), std::isnan(y)) << i;
      continue;
    }
    worst = std::max(worst, std::abs(x - y) / std::max(std::abs(x), 1.0));
  }
  std::printf("replay vs live: worst relative t difference %.2e\n", worst);
  EXPECT_LT(worst, 1e-5);
}

TEST(LivePipeline, FallingBehindSkipsVolumesLosesNothingAndCatchesUp) {
  SKIP_WITHOUT_DATA();
  test::TempDir tmp;
  const Fixture f = make_fixture(tmp.path());
  const PipelineConfig config = config_for(f, tmp.path() / "session");
  // A volume every 30 ms, each analysed volume held 150 ms longer: the stage cannot keep up on any machine (a slower
  // one only skips more).
  const LiveRun live = run_live(f, config, false, 0.03, 150);
  ASSERT_TRUE(live.report.ok());
  EXPECT_EQ(live.ingest.recorded, 48);                                // recording never waits
  EXPECT_EQ(live.counters.uploaded + live.ingest.queue_dropped, 48);  // every volume reached the device (or was
                                                                      // dropped before it, counted)
  EXPECT_GT(live.counters.skipped + live.ingest.queue_dropped, 0);    // it fell behind
  EXPECT_LT(live.counters.analysed, 48);
  ASSERT_FALSE(live.lines.empty());
  EXPECT_EQ(live.lines.back()["volume"], 47);  // caught up: the last volume was analysed and sent
  int64_t skipped_reported = 0;
  for (const auto& line : live.lines) skipped_reported += line["skipped"].get<int64_t>();
  EXPECT_EQ(skipped_reported, live.counters.skipped);  // each skip is reported on the next line
  // The last PUB header (volume 47, the last handled) has the final counts: every volume the stage received, the
  // skips, the drops before it, and those drops as the run's missing indices.
  ASSERT_FALSE(live.pub_headers.empty());
  const auto& last = live.pub_headers.back();
  ASSERT_EQ(last["volume"], 47);
  EXPECT_EQ(last["counters"]["received"], live.counters.received);
  EXPECT_EQ(live.counters.received, live.counters.uploaded);  // no resend, no failure
  EXPECT_EQ(last["counters"]["analysed"], live.counters.analysed);
  EXPECT_EQ(last["counters"]["skipped"], live.counters.skipped);
  EXPECT_EQ(last["counters"]["dropped"], live.ingest.queue_dropped);
  EXPECT_EQ(last["counters"]["missing"], live.ingest.queue_dropped);
  EXPECT_EQ(last["counters"]["duplicates"], 0);
  std::printf("falling behind: %lld analysed, %lld skipped, %lld dropped before the device\n",
              static_cast<long long>(live.counters.analysed), static_cast<long long>(live.counters.skipped),
              static_cast<long long>(live.ingest.queue_dropped));
}

// Subject-space ROIs ([registration], no T1: the reference EPI registered to Colin27) beside a live run. The
// registration is held until 12 volumes were analysed (a test hook), so ingest and every per-TR stage provably go on
// while it is pending; the sender then waits, from volume 20 on, until the registration's result is there (paced by
// the server's progress, never by the clock), so the ROIs start between volumes 12 and 21 on any machine.
TEST(LivePipeline, SubjectSpaceRoisStartWhenReadyWhileTheRunGoesOn) {
  SKIP_WITHOUT_DATA();
  test::TempDir tmp;
  const Fixture f = make_fixture(tmp.path());
  PipelineConfig config = config_for(f, tmp.path() / "session");
  config.template_name = "colin27";
  config.epi_levels = "8:8,4:4";  // a 12-dof MI registration to the 1 mm template, kept short for PoCL
  constexpr int64_t kHeldUntil = 12, kWaitFrom = 20;
  const LiveRun live = run_live(
      f, config, true, 0.0, 0,
      [&](LiveStage& stage) {
        ASSERT_NE(stage.subject_space(), nullptr);
        stage.subject_space()->set_hold([&stage](const std::string&) {
          EXPECT_TRUE(test::eventually([&] { return stage.counters().analysed >= kHeldUntil; }));
        });
      },
      [](LiveStage& stage, int64_t previous) {
        return previous < kWaitFrom || stage.subject_space()->result("run-01") != nullptr;
      });
  ASSERT_TRUE(live.report.ok());
  EXPECT_EQ(live.ingest.recorded, 48);
  EXPECT_EQ(live.counters.analysed, 48);
  EXPECT_EQ(live.counters.failed, 0);
  ASSERT_EQ(live.lines.size(), 48u);
  // Pending, then ready from volume `ready` on; while pending: no ROI means, no feedback value, said why.
  int64_t ready = -1;
  for (const auto& line : live.lines) {
    SCOPED_TRACE(line.dump());
    ASSERT_TRUE(line.contains("roi_status"));
    const int64_t v = line["volume"];
    if (ready < 0 && line["roi_status"] == "ready") ready = v;
    if (ready < 0) {
      EXPECT_EQ(line["roi_status"], "pending");
      EXPECT_EQ(line["status"], "rois-pending");
      EXPECT_TRUE(line["feedback"].is_null());
      EXPECT_FALSE(line.contains("rois"));
      EXPECT_TRUE(line.contains("motion"));  // the other stages go on
    } else {
      EXPECT_EQ(line["roi_status"], "ready");
      EXPECT_TRUE(line.contains("rois") && line["rois"].contains("M1_L"));
    }
  }
  std::printf("subject-space ROIs ready at volume %lld (held until %lld analysed)\n", static_cast<long long>(ready),
              static_cast<long long>(kHeldUntil));
  ASSERT_GE(ready, kHeldUntil);
  ASSERT_LE(ready, kWaitFrom + 1);
  // The volumes before were back-filled from the device ring: the baseline exists at once (without them, the first
  // ready volume would have a single baseline volume: "not-enough-baseline").
  EXPECT_EQ(live.lines[static_cast<size_t>(ready)]["status"], "ok") << live.lines[static_cast<size_t>(ready)].dump();
  // The results stream: the ROI labels from the first ready message on (the frame in it, then every 16th), and the
  // seed map and the connectivity matrix only from then.
  ASSERT_EQ(live.pub_headers.size(), 48u);
  for (const auto& h : live.pub_headers) {
    const int64_t v = h["volume"];
    std::set<std::string> frames;
    for (const auto& fr : h["frames"]) frames.insert(fr["name"].get<std::string>());
    SCOPED_TRACE(v);
    if (v < ready) {
      EXPECT_FALSE(h.contains("roi_labels"));
      EXPECT_FALSE(frames.count("seed_map") || frames.count("connectivity") || frames.count("roi_labels"));
      continue;
    }
    ASSERT_TRUE(h.contains("roi_labels"));
    EXPECT_EQ(h["roi_labels"]["names"], nlohmann::json::array({"M1_L", "M1_L"}));  // the feedback ROI, the seed
    const bool carries = (v - ready) % kRoiLabelsEvery == 0;
    EXPECT_EQ(h["roi_labels"]["in_this_message"], carries);
    EXPECT_EQ(frames.count("roi_labels"), carries ? 1u : 0u);
    EXPECT_TRUE(frames.count("seed_map") && frames.count("connectivity"));
  }
  // The run's files: the transform, the ROIs and the atlas on the EPI grid, the timing report.
  const auto run_dir = tmp.path() / "session" / "runs" / "run-01";
  for (const char* file : {"epi_to_template_affine.txt", "atlas_in_epi.nii.gz", "rois_in_epi.nii.gz", "rois_in_epi.tsv",
                           "subject_space.json"}) {
    EXPECT_TRUE(std::filesystem::exists(run_dir / file)) << file;
  }
  std::ifstream report_file(run_dir / "subject_space.json");
  const auto report = nlohmann::json::parse(report_file);
  EXPECT_EQ(report["status"], "ready");
  EXPECT_EQ(report["reference_volume"], 0);
  std::printf("subject_space.json steps: %s\n", report["steps"].dump().c_str());

  // The replay waits for the ROIs on the reference volume: every volume has them. From the live run's first ready
  // volume on, the feedback (back-filled live, complete in the replay) agrees.
  PipelineConfig replay_config = config;
  replay_config.results_pub.clear();
  replay_config.feedback_tcp.clear();
  replay_session(test::test_device(), replay_config, tmp.path() / "session", tmp.path() / "replay", nullptr);
  const auto replayed = read_tsv(tmp.path() / "replay" / "runs" / "run-01" / "feedback.tsv");
  ASSERT_EQ(replayed.size(), 49u);
  EXPECT_NE(replayed[1][2], "rois-pending");
  expect_same_rows(run_dir / "feedback.tsv", tmp.path() / "replay" / "runs" / "run-01" / "feedback.tsv",
                   static_cast<size_t>(ready) + 1);
}

}  // namespace
}  // namespace rtf::stream
