// Live server benchmark (issue 6): end-to-end latency per volume through the real server in one process. A phantom
// run (Colin27, realistic motion, block design) is replayed over loopback ZeroMQ into IngestCore + ZmqIngestServer,
// recorded, and run through the LiveStage with every stage on (motion, smoothing, cumulative and sliding GLM, CCA,
// seed map, AAL matrices, feedback ROI and value), and out through the PUB socket and the TCP feedback server to a
// connected client. Per stage and end to end (volume fully received -> feedback line handed to the TCP server),
// p50/p95/p99/max over the analysed volumes after the first `--warmup` (the first volume builds the run's kernels).
// `--runs N` streams N runs of the phantom at once (run-1 ... run-N, one sender each, the same period), as a second
// sender at the scanner would: one line per run, each run's quantiles over its own volumes (docs/live.md, "Several
// runs at once"; runs beyond --max-live-runs are recorded only and have no analysed volumes). `--decoder 1` adds a
// live decoder over the phantom's brain (a random logistic model file). JSON lines on stdout.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <thread>

#include "bench/bench_stats.hpp"
#include "core/decoding/decoder_model_file.hpp"
#include "core/util/quantiles.hpp"
#include "sim/phantom/phantom.hpp"
#include "sim/replay/replay.hpp"
#include "stream/pipeline/live_stage.hpp"
#include "stream/server/ingest_core.hpp"
#include "stream/server/zmq_ingest_server.hpp"

namespace {

struct Options {
  std::string device;
  std::string data_dir = "build/data";
  std::string work_dir = "/tmp";
  int64_t volumes = 200;
  int warmup = 20;
  double period_s = 1.0;  // seconds between volumes (the TR at 1x)
  bool fsync = false;
  bool qa = true;
  int runs = 1;  // runs streamed at once
  int64_t max_live_runs = 2;
  bool decoder = false;  // a live decoder over the phantom's brain ([decoder] model, a random logistic model)
};

// A logistic model file over the voxels of `volume` above a fifth of its maximum (the phantom's brain), random weights.
std::filesystem::path write_decoder_model(const rtf::Image& volume, const std::filesystem::path& dir,
                                          int64_t& features) {
  rtf::DecoderModelFile m;
  m.model = rtf::DecoderModel::kLogistic;
  m.classes = {"rest", "task"};
  const rtf::ImageHeader& h = volume.header();
  m.dims = {h.dims[0], h.dims[1], h.dims[2]};
  m.affine = h.affine;
  const std::span<const float> v = volume.volume(0);
  const float top = *std::max_element(v.begin(), v.end());
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] > 0.2f * top) m.voxels.push_back(static_cast<int>(i));
  }
  m.coef = Eigen::MatrixXd::Random(static_cast<Eigen::Index>(m.voxels.size()), 1) * 1e-3;
  m.intercept = Eigen::VectorXd::Zero(1);
  features = m.features();
  const std::filesystem::path path = dir / "decoder_model.json";
  std::ofstream(path) << rtf::decoder_model_to_json(m).dump();
  return path;
}

void bench_grid(rtf::Device& device, const Options& opt, std::array<int64_t, 3> dims, double voxel_mm) {
  using namespace rtf;
  sim::PhantomSpec spec;
  spec.template_path = std::filesystem::path(opt.data_dir) / "mricron/ch2bet.nii.gz";
  spec.grid = dims;
  spec.voxel_mm = {voxel_mm, voxel_mm, voxel_mm};
  spec.volumes = opt.volumes;
  spec.tr_s = 1.0;
  spec.block_on_s = 20.0;
  spec.block_off_s = 20.0;
  sim::PhantomResult ph = sim::make_phantom(spec);
  for (float& v : ph.bold.data()) v = std::round(v);
  ph.bold.header().source_type = DataType::kInt16;
  const std::filesystem::path dir = std::filesystem::path(opt.work_dir) / fmt::format("rtfmri-bench-live-{}", getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    std::ofstream events(dir / "events.tsv");
    events << "onset\tduration\ttrial_type\n";
    for (const sim::Event& e : ph.spec.events) events << e.onset_s << "\t" << e.duration_s << "\ttask\n";
  }
  stream::PipelineConfig c;
  c.session_dir = (dir / "session").string();
  c.ring = 128;
  c.tr_s = 1.0;
  c.volumes = opt.volumes;
  c.events = (dir / "events.tsv").string();
  c.cca_period_s = spec.block_on_s + spec.block_off_s;
  c.glm_window = 100;
  c.cca_window = 100;
  c.connectivity_window = 100;
  c.data_dir = opt.data_dir;
  stream::RoiSpec m1;
  m1.name = "M1_L";
  m1.sphere_mm = std::array<double, 3>{-38.0, -24.0, 56.0};
  c.feedback_rois = {m1};
  c.seed = m1;
  c.results_pub = "tcp://127.0.0.1:*";
  c.feedback_tcp = "127.0.0.1:0";
  c.max_live_runs = opt.max_live_runs;
  c.qa = opt.qa;
  int64_t decoder_features = 0;
  if (opt.decoder) c.decoder_model = write_decoder_model(ph.bold, dir, decoder_features).string();
  stream::IngestOptions ingest;
  ingest.recorder.fsync = opt.fsync ? stream::FsyncPolicy::kEveryVolume : stream::FsyncPolicy::kNone;
  std::vector<std::vector<stream::LatencyStage>> stages(static_cast<size_t>(opt.runs));
  stream::LiveStageCounters counters;
  {
    stream::IngestCore core(c.session_dir, ingest);
    stream::LatencyLog latency(dir / "session" / "latency.jsonl");
    zmq::context_t context(1);
    stream::ZmqServerOptions server_options;
    server_options.address = "tcp://127.0.0.1:*";
    stream::ZmqIngestServer server(context, core, server_options);
    stream::LiveOutputs outputs(context, c);
    // A feedback client that reads everything (as a stimulus script would).
    std::thread client([port = outputs.tcp()->port()] {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(port);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
        char buf[65536];
        while (::recv(fd, buf, sizeof(buf), 0) > 0) {
        }
      }
      ::close(fd);
    });
    stream::LiveStage stage(device, c, core.queue(), latency, c.session_dir, &outputs);
    stage.set_ingest_stats([&core] { return core.quick_stats(); });
    std::thread stage_thread([&] { stage.run(); });
    std::thread server_thread([&] { server.run(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::vector<sim::ReplayReport> reports(static_cast<size_t>(opt.runs));
    std::vector<std::thread> senders;
    for (int k = 0; k < opt.runs; ++k) {
      senders.emplace_back([&, k] {
        sim::ReplayOptions r;
        r.address = server.endpoint();
        r.tr_s = opt.period_s;
        r.speed = 1.0;
        r.finish_timeout_s = 300;
        r.run = fmt::format("run-{}", k + 1);
        reports[static_cast<size_t>(k)] = sim::replay(ph.bold, r, context);
      });
    }
    for (std::thread& t : senders) t.join();
    for (int i = 0; i < 600 && static_cast<int64_t>(latency.records().size()) < opt.volumes * opt.runs; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    server.stop();
    server_thread.join();
    core.queue().close();
    stage_thread.join();
    outputs.stop();
    client.join();
    for (const sim::ReplayReport& report : reports) {
      if (!report.ok()) throw std::runtime_error("replay failed");
    }
    counters = stage.counters();
    // Quantiles over each run's analysed volumes after the warm-up.
    const auto records = latency.records();
    for (int k = 0; k < opt.runs; ++k) {
      stream::LatencyLog steady("");
      for (const stream::IngestLatency& record : records) {
        if (record.run == fmt::format("run-{}", k + 1) && record.index >= opt.warmup) steady.add(record);
      }
      stages[static_cast<size_t>(k)] = steady.stages();
    }
  }
  std::filesystem::remove_all(dir);
  for (int k = 0; k < opt.runs; ++k) {
    const nlohmann::json per = stream::stages_json(stages[static_cast<size_t>(k)]);
    rtf::bench::print_line({{"bench", "live end to end"},
                            {"size", fmt::format("{}x{}x{}", dims[0], dims[1], dims[2])},
                            {"device", device.info().device_name},
                            {"volumes", opt.volumes},
                            {"period_ms", opt.period_s * 1e3},
                            {"warmup_volumes", opt.warmup},
                            {"fsync", opt.fsync},
                            {"runs_at_once", opt.runs},
                            {"max_live_runs", opt.max_live_runs},
                            {"qa", opt.qa},
                            {"decoder_features", decoder_features},
                            {"run", fmt::format("run-{}", k + 1)},
                            {"analysed", counters.analysed},
                            {"skipped", counters.skipped},
                            {"not_analysed", counters.not_analysed},
                            {"stages", per}});
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rtfmri live server benchmark: end-to-end latency, JSON lines on stdout"};
  Options opt;
  app.add_option("--device", opt.device, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--data", opt.data_dir, "Directory with mricron/ch2bet.nii.gz and aal.nii.gz")->capture_default_str();
  app.add_option("--work", opt.work_dir, "Where the session directory is written (and removed)")->capture_default_str();
  app.add_option("--volumes", opt.volumes, "Volumes per run")->capture_default_str();
  app.add_option("--warmup", opt.warmup, "Volumes left out of the quantiles")->capture_default_str();
  app.add_option("--period", opt.period_s, "Seconds between volumes")->capture_default_str();
  app.add_flag("--fsync", opt.fsync, "fdatasync every volume before its ACK (the server's default)");
  app.add_option("--qa", opt.qa, "The live QA stage on (1, the server's default) or off (0)")->capture_default_str();
  app.add_option("--decoder", opt.decoder, "A live decoder over the phantom's brain (1) or none (0, the default)")
      ->capture_default_str();
  app.add_option("--runs", opt.runs, "Runs streamed at once (run-1 ... run-N), one sender each")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--max-live-runs", opt.max_live_runs, "The server's max_live_runs")
      ->check(CLI::Range(int64_t{1}, int64_t{64}))
      ->capture_default_str();
  std::string grids = "both";
  app.add_option("--grids", grids, "Which grids: small (64x64x33), large (104x104x72) or both")
      ->check(CLI::IsMember({"small", "large", "both"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  spdlog::set_default_logger(spdlog::stderr_color_mt("stderr"));  // stdout carries only the JSON lines
  try {
    auto device = rtf::Device::open(opt.device);
    if (grids != "large") bench_grid(*device, opt, {64, 64, 33}, 3.0);
    if (grids != "small") bench_grid(*device, opt, {104, 104, 72}, 2.0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_live: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
