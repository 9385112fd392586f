// Ingest latency benchmark (issue 3): volumes sent over loopback ZeroMQ by the simulator's sender to the real
// server (IngestCore + ZmqIngestServer + LiveStage uploading only); per volume the server's own timestamps give
// received -> recorded (validation, CRC-32, append + journal, fsync per policy), recorded -> uploaded (queue hand-off,
// pinned staging, device copy and conversion to float) and received -> uploaded. One JSON line per grid and fsync
// policy, with p50/p95/p99/max in ms; the fsync cost is the difference between the two policies.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "bench/bench_stats.hpp"
#include "core/device/device.hpp"
#include "core/util/quantiles.hpp"
#include "sim/replay/replay.hpp"
#include "stream/pipeline/live_stage.hpp"
#include "stream/protocol/checksum.hpp"
#include "stream/server/ingest_core.hpp"
#include "stream/server/latency_log.hpp"
#include "stream/server/zmq_ingest_server.hpp"

namespace {

using namespace rtf;

Image make_series(std::array<int64_t, 3> dims, int64_t volumes) {
  ImageHeader h;
  h.dims = dims;
  h.num_volumes = volumes;
  h.tr_s = 1.0;
  h.source_type = DataType::kInt16;
  Image image(h);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> d(0, 4000);
  for (float& v : image.data()) v = static_cast<float>(d(rng));
  return image;
}

void bench_latency(Device* device, std::array<int64_t, 3> dims, int64_t volumes, double period_s,
                   stream::FsyncPolicy fsync, const std::filesystem::path& parent) {
  const Image image = make_series(dims, volumes);
  const std::filesystem::path dir = parent / fmt::format("rtfmri-bench-ingest-{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::vector<stream::IngestLatency> records;
  {
    stream::IngestOptions options;
    options.recorder.fsync = fsync;
    stream::IngestCore core(dir, options);
    stream::LatencyLog latency("");
    zmq::context_t context(1);
    stream::ZmqServerOptions server_options;
    server_options.address = "tcp://127.0.0.1:*";
    stream::ZmqIngestServer server(context, core, server_options);
    std::unique_ptr<stream::LiveStage> upload;
    if (device != nullptr) {
      upload = std::make_unique<stream::LiveStage>(*device, stream::upload_only_config(dir, 64), core.queue(), latency,
                                                   dir, nullptr);
    }
    std::thread upload_thread([&] {
      if (upload) {
        upload->run();
        return;
      }
      while (true) {
        auto v = core.queue().pop(std::chrono::milliseconds(100));
        if (!v) {
          if (core.queue().closed()) return;
          continue;
        }
        latency.add(stream::ingest_latency(*v));
      }
    });
    std::thread server_thread([&] { server.run(); });
    sim::ReplayOptions replay_options;
    replay_options.address = server.endpoint();
    replay_options.tr_s = period_s;
    replay_options.speed = 1.0;
    replay_options.end_run = false;
    const sim::ReplayReport report = sim::replay(image, replay_options, context);
    server.stop();
    server_thread.join();
    core.queue().close();
    upload_thread.join();
    if (!report.ok()) throw std::runtime_error("replay failed");
    records = latency.records();
  }
  std::filesystem::remove_all(dir);
  std::vector<double> written, recorded, uploaded, total;
  const size_t skip = std::min<size_t>(10, records.size() / 10);  // first volumes: allocation, kernel build
  for (size_t i = skip; i < records.size(); ++i) {
    const auto& r = records[i];
    written.push_back((r.written_ns - r.received_ns) * 1e-6);
    recorded.push_back((r.recorded_ns - r.received_ns) * 1e-6);
    uploaded.push_back((r.uploaded_ns - r.written_ns) * 1e-6);
    total.push_back((r.uploaded_ns - r.received_ns) * 1e-6);
  }
  bench::print_line({{"bench", "ingest_latency"},
                     {"grid", fmt::format("{}x{}x{}", dims[0], dims[1], dims[2])},
                     {"datatype", "int16"},
                     {"fsync", fsync == stream::FsyncPolicy::kEveryVolume ? "every_volume" : "none"},
                     {"period_ms", period_s * 1e3},
                     {"warmup_volumes", skip},
                     {"received_to_written", bench::latency_json(written)},
                     {"received_to_recorded", bench::latency_json(recorded)},  // durable and ACKed; beside the upload
                     {"written_to_uploaded", bench::latency_json(uploaded)},
                     {"received_to_uploaded", bench::latency_json(total)},
                     {"device", device != nullptr ? device->info().label() : "none"},
                     {"session_dir_parent", parent.string()}});
}

// CRC-32 throughput: the one pass over the payload that ingest cannot avoid.
void bench_crc(std::array<int64_t, 3> dims) {
  std::vector<std::byte> payload(static_cast<size_t>(dims[0] * dims[1] * dims[2] * 2), std::byte{7});
  std::vector<double> ms;
  uint32_t sink = 0;
  for (int i = 0; i < 50; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    sink += stream::crc32(payload);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const auto t = bench::summarize(ms);
  bench::print_line({{"bench", "crc32"},
                     {"bytes", payload.size()},
                     {"median_ms", t.median},
                     {"gbs", static_cast<double>(payload.size()) / (t.median * 1e6)},
                     {"checksum", sink}});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rtfmri ingest latency benchmark: JSON lines on stdout"};
  std::string device_spec;
  int64_t volumes = 300;
  double period_ms = 50.0;
  std::string dir = std::filesystem::temp_directory_path().string();
  bool no_device = false;
  app.add_option("--device", device_spec, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--volumes", volumes, "Volumes per configuration")->capture_default_str();
  app.add_option("--period-ms", period_ms, "Time between volumes (50 ms = TR 1 s at 20x)")->capture_default_str();
  app.add_option("--dir", dir, "Where the session directory is written (its disk sets the fsync cost)")
      ->capture_default_str();
  app.add_flag("--no-device", no_device, "Ingest and recording only");
  CLI11_PARSE(app, argc, argv);
  try {
    std::unique_ptr<Device> device;
    if (!no_device) device = Device::open(device_spec);
    for (auto dims : {std::array<int64_t, 3>{64, 64, 33}, std::array<int64_t, 3>{104, 104, 72}}) {
      bench_crc(dims);
      for (auto fsync : {stream::FsyncPolicy::kEveryVolume, stream::FsyncPolicy::kNone}) {
        bench_latency(device.get(), dims, volumes, period_ms * 1e-3, fsync, dir);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_ingest: %s\n", e.what());
    return 1;
  }
  return 0;
}
