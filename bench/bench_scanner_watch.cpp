// Scanner watch latency benchmark (issue 18): a volume's file(s) written into an export folder as a console writes them
// (scanner/dicom/dicom_writer.hpp, enhanced_writer.hpp) -> `rtfmri scanner watch`'s loop (inotify, assembly, decoding,
// protocol 1) -> the real ingest server (IngestCore + ZmqIngestServer, recording with fsync) -> the ACK back at the
// watcher. Latency per volume = ACK arrival - the moment the writer finished the volume's last file (its close or
// rename), split into file -> reported ready (the watcher) and ready -> ACK (read, assemble, send, record). The writer
// writes the next volume once the previous one is acknowledged (paced by the server, not the clock). One JSON line per
// layout and grid with p50/p95/p99/max in ms.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "bench/bench_stats.hpp"
#include "scanner/dicom/dicom_writer.hpp"
#include "scanner/dicom/enhanced_writer.hpp"
#include "scanner/watch/scanner_watch.hpp"
#include "stream/server/ingest_core.hpp"
#include "stream/server/volume_handler.hpp"
#include "stream/server/zmq_ingest_server.hpp"

namespace {

using namespace rtf;
namespace fs = std::filesystem;

Image make_volume(std::array<int64_t, 3> dims, uint32_t seed) {
  ImageHeader h;
  h.dims = dims;
  h.voxel_mm = {2.0, 2.0, 2.0};
  h.affine = Eigen::Matrix4d::Identity();
  h.affine.topLeftCorner<3, 3>() = Eigen::Vector3d(-2.0, 2.0, 2.0).asDiagonal();
  h.affine.topRightCorner<3, 1>() = Eigen::Vector3d(100.0, -100.0, -60.0);
  h.tr_s = 1.0;
  h.source_type = DataType::kUint16;
  Image image(h);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, 4000);
  for (float& v : image.data()) v = static_cast<float>(d(rng));
  return image;
}

struct Acks {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<int64_t, scanner::VolumeTimes> by_index;
};

void bench_layout(const std::string& layout, std::array<int64_t, 3> dims, int64_t volumes, const fs::path& parent) {
  const fs::path root = parent / fmt::format("rtfmri-bench-scanner-{}", ::getpid());
  fs::remove_all(root);
  fs::create_directories(root / "export");
  const Image volume = make_volume(dims, 11);
  dicom::DicomWriteSeries series;
  series.series_instance_uid = "1.2.826.0.1.3680043.9.7.18.1";
  series.series_number = 5;
  series.tr_s = 1.0;
  std::vector<int64_t> written_ns(static_cast<size_t>(volumes));
  Acks acks;
  {
    stream::IngestCore core(root / "server");
    zmq::context_t context(1);
    stream::ZmqServerOptions server_options;
    server_options.address = "tcp://127.0.0.1:*";
    stream::ZmqIngestServer server(context, core, server_options);
    std::thread server_thread([&] { server.run(); });

    scanner::ScannerWatchOptions options;
    options.folder = root / "export";
    options.watch.mode = scanner::WatchMode::kInotify;
    options.watch.recursive = true;
    options.sender.address = server.endpoint();
    options.sender.resend_timeout_s = 30.0;
    options.session = "bench";
    options.stop_after = volumes;
    options.on_acknowledged = [&](const std::string&, int64_t index, const scanner::VolumeTimes& times) {
      {
        const std::lock_guard lock(acks.mutex);
        acks.by_index[index] = times;
      }
      acks.changed.notify_all();
    };
    scanner::ScannerWatch watch(options, context);
    std::thread watch_thread([&] { watch.run(); });

    for (int64_t t = 0; t < volumes; ++t) {
      const fs::path dir = root / "export";
      if (layout == "mosaic") {
        dicom::write_mosaic_volume(volume, series, t, dir / fmt::format("001_000005_{:06d}.dcm", t + 1));
      } else if (layout == "enhanced") {
        dicom::write_enhanced_volume(volume, series, t, dir / fmt::format("MR.5.{:06d}.dcm", t + 1));
      } else {
        std::vector<fs::path> files;
        for (int64_t k = 0; k < dims[2]; ++k) files.push_back(dir / fmt::format("i{}.MRDC.{}", t, t * dims[2] + k + 1));
        dicom::write_slice_files(volume, series, t, files);
      }
      written_ns[static_cast<size_t>(t)] = stream::steady_now_ns();
      std::unique_lock lock(acks.mutex);
      acks.changed.wait(lock, [&] { return acks.by_index.count(t) > 0; });
    }
    watch_thread.join();
    server.stop();
    server_thread.join();
  }
  std::vector<double> total, detect, assemble, send, ack;
  const auto ms = [](int64_t from, int64_t to) { return static_cast<double>(to - from) / 1e6; };
  for (int64_t t = 0; t < volumes; ++t) {
    const scanner::VolumeTimes& s = acks.by_index.at(t);
    const int64_t written = written_ns[static_cast<size_t>(t)];
    total.push_back(ms(written, s.acked_ns));
    detect.push_back(ms(written, s.ready_ns));
    assemble.push_back(ms(s.ready_ns, s.assembled_ns));
    send.push_back(ms(s.assembled_ns, s.sent_ns));
    ack.push_back(ms(s.sent_ns, s.acked_ns));
  }
  bench::print_line({{"bench", "scanner_watch"},
                     {"layout", layout},
                     {"dims", dims},
                     {"volumes", volumes},
                     {"file_to_ack", bench::latency_json(total)},
                     {"file_to_ready", bench::latency_json(detect)},
                     {"read_and_assemble", bench::latency_json(assemble)},
                     {"encode_and_send", bench::latency_json(send)},
                     {"send_to_ack", bench::latency_json(ack)}});
  fs::remove_all(root);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Scanner watch latency: file written -> volume acknowledged by the ingest server"};
  int64_t volumes = 200;
  std::string parent = fs::temp_directory_path().string();
  app.add_option("--volumes", volumes, "Volumes per layout")->capture_default_str();
  app.add_option("--dir", parent,
                 "Folder for the export folder and the server's session (a disk: the server's fsync counts; /dev/shm: "
                 "the software alone)")
      ->capture_default_str();
  std::string only;
  app.add_option("--layout", only, "Only this layout: mosaic, enhanced or ge");
  CLI11_PARSE(app, argc, argv);
  if (only.empty() || only == "mosaic") bench_layout("mosaic", {64, 64, 33}, volumes, parent);
  if (only.empty() || only == "mosaic") bench_layout("mosaic", {104, 104, 72}, volumes, parent);
  if (only.empty() || only == "enhanced") bench_layout("enhanced", {104, 104, 72}, volumes, parent);
  if (only.empty() || only == "ge") bench_layout("ge", {64, 64, 33}, volumes, parent);
  return 0;
}
