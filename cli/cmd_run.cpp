// `rtfmri run --listen ADDR --session-dir DIR`: the ingest server. Receives volumes (protocol 1, docs/protocol.md),
// records each durably before acknowledging it, and uploads it into the device ring buffer on a separate thread.
// Stops on SIGINT/SIGTERM (or after --exit-after-runs runs), then prints counters and the latency summary.
#include <fmt/format.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <memory>
#include <stdexcept>
#include <thread>

#include "cli/cli_support.hpp"
#include "cli/command_registry.hpp"
#include "core/io/nifti_io.hpp"
#include "stream/pyneal/pyneal_receiver.hpp"
#include "stream/server/ingest_core.hpp"
#include "stream/server/latency_log.hpp"
#include "stream/server/upload_stage.hpp"
#include "stream/server/zmq_ingest_server.hpp"

namespace {

struct RunOptions {
  std::string listen = "tcp://127.0.0.1:5555";
  std::string session_dir;
  std::string session;
  std::string fsync = "every-volume";
  int64_t max_volumes = 100000;
  uint64_t max_payload_bytes = 1ull << 30;
  size_t max_header_bytes = 64u << 10;
  int64_t max_message_bytes = 0;
  int64_t ring = 64;
  size_t queue = 64;
  int64_t exit_after_runs = 0;
  std::string pyneal;  // PAIR endpoint for pyneal_scanner; empty: off
  std::string pyneal_run = "run-01";
  double pyneal_tr = 0.0;
  int64_t pyneal_volumes = 0;
  bool no_listen = false;
  bool no_motion = false;
  std::string motion_ref = "0";
};

// Blocks SIGINT/SIGTERM in this thread (and the threads it starts) so that only sigtimedwait sees them.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

void print_stats(const rtf::stream::IngestStats& s, int64_t uploaded, int64_t upload_failed, int64_t motion_flagged) {
  fmt::print("ingest: {} messages, {} volumes recorded, {} duplicates, {} NACKs, {} runs closed\n", s.messages,
             s.recorded, s.duplicates, s.nacked, s.runs_closed);
  for (const auto& [code, n] : s.nacks_by_code) fmt::print("  NACK {}: {}\n", code, n);
  fmt::print("device: {} volumes uploaded, {} failed, {} skipped (queue full), {} motion estimates flagged\n", uploaded,
             upload_failed, s.queue_dropped, motion_flagged);
}

void run(const RunOptions& o, const rtf::cli::GlobalOptions& globals) {
  using namespace rtf::stream;
  IngestOptions ingest;
  ingest.limits.max_volumes = o.max_volumes;
  ingest.limits.max_payload_bytes = o.max_payload_bytes;
  ingest.limits.max_header_bytes = o.max_header_bytes;
  ingest.recorder.fsync = o.fsync == "none" ? FsyncPolicy::kNone : FsyncPolicy::kEveryVolume;
  ingest.recorder.session_id = o.session;
  ingest.queue_capacity = o.queue;

  const sigset_t stop_signals = block_stop_signals();
  std::unique_ptr<rtf::Device> device;
  if (o.ring > 0) device = rtf::cli::open_device(globals);
  IngestCore core(o.session_dir, ingest);
  if (!o.session.empty()) {
    std::string why;
    if (!core.bind_session(o.session, why)) throw std::runtime_error(why);
  }
  LatencyLog latency(core.session_dir() / "latency.jsonl");
  zmq::context_t context(1);
  std::unique_ptr<ZmqIngestServer> server;
  if (!o.no_listen) {
    ZmqServerOptions server_options;
    server_options.address = o.listen;
    server_options.max_message_bytes = o.max_message_bytes;
    server = std::make_unique<ZmqIngestServer>(context, core, server_options);
    spdlog::info("listening on {} (max message {} bytes), recording into {} (fsync: {})", server->endpoint(),
                 server->max_message_bytes(), core.session_dir().string(), o.fsync);
  }
  std::unique_ptr<pyneal::PynealReceiver> pyneal_receiver;
  const std::string pyneal_session = o.session.empty() ? "pyneal" : o.session;
  if (!o.pyneal.empty()) {
    pyneal::PynealOptions p;
    p.address = o.pyneal;
    p.session = pyneal_session;
    p.run = o.pyneal_run;
    if (o.pyneal_tr > 0) p.tr_override_s = o.pyneal_tr;
    p.limits = ingest.limits;
    p.max_message_bytes = o.max_message_bytes;
    p.stop_after = o.pyneal_volumes;
    p.return_after_stop = o.pyneal_volumes > 0;
    pyneal_receiver = std::make_unique<pyneal::PynealReceiver>(context, p, core.as_handler());
    spdlog::info("pyneal: PAIR socket on {} (session {}, run {}{})", pyneal_receiver->endpoint(), pyneal_session,
                 o.pyneal_run, o.pyneal_volumes > 0 ? fmt::format(", {} volumes", o.pyneal_volumes) : "");
  }

  UploadStage upload(device.get(), core.queue(), latency, o.ring);
  if (device && !o.no_motion) {
    rtf::LiveMotionOptions motion;
    if (o.motion_ref.find_first_not_of("0123456789") == std::string::npos) {
      motion.reference_index = std::stoll(o.motion_ref);
    } else {
      motion.reference_image = rtf::read_nifti(o.motion_ref);
    }
    upload.enable_motion_correction(core.session_dir(), std::move(motion));
  }
  std::thread upload_thread([&] { upload.run(); });
  std::thread server_thread;
  if (server) server_thread = std::thread([&] { server->run(); });
  std::thread pyneal_thread;
  if (pyneal_receiver) {
    // pyneal has no end-of-run message: after STOP went out for the last volume, close the run here.
    pyneal_thread = std::thread([&] {
      pyneal_receiver->run();
      if (!pyneal_receiver->stop_sent() || o.pyneal_volumes <= 0) return;
      const Reply r = core.handle_end_of_run(EndOfRun{1, pyneal_session, o.pyneal_run, o.pyneal_volumes});
      if (const auto* nack = std::get_if<Nack>(&r)) spdlog::error("pyneal run not closed: {}", nack->reason);
    });
  }

  while (true) {
    timespec wait{0, 50'000'000};
    siginfo_t info;
    if (sigtimedwait(&stop_signals, &info, &wait) > 0) {
      spdlog::info("signal {}: stopping", info.si_signo);
      break;
    }
    if (o.exit_after_runs > 0 && core.stats().runs_closed >= o.exit_after_runs) {
      spdlog::info("{} runs closed: stopping", o.exit_after_runs);
      break;
    }
  }
  if (server) {
    server->stop();
    server_thread.join();
  }
  if (pyneal_receiver) {
    pyneal_receiver->stop();
    pyneal_thread.join();
    const auto c = pyneal_receiver->counters();
    fmt::print(
        "pyneal: {} connections, {} handshakes, {} volumes received, {} acknowledged ({} duplicates), {} rejected\n",
        c.connections, c.handshakes, c.received, c.acked, c.duplicates, c.rejected);
  }
  core.queue().close();
  upload_thread.join();
  for (const std::string& line : core.write_open_runs()) fmt::print("{}\n", line);
  print_stats(core.stats(), upload.uploaded(), upload.failed(), upload.motion_flagged());
  const std::string summary = latency.summary();
  if (!summary.empty()) fmt::print("latency per volume:\n{}", summary);
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd =
      app.add_subcommand("run", "Ingest server: receive volumes over ZeroMQ, record them, upload to the device");
  cmd->add_option("--listen", o->listen, "ZeroMQ ROUTER endpoint to bind (protocol: docs/protocol.md)")
      ->capture_default_str();
  cmd->add_option("--session-dir", o->session_dir, "Session directory (created if needed; docs/recording.md)")
      ->required();
  cmd->add_option("--session", o->session,
                  "Session id this server records (default: the session of the first volume received)");
  cmd->add_option("--fsync", o->fsync,
                  "every-volume: fdatasync before each ACK (survives power loss); none: survives a process crash only")
      ->check(CLI::IsMember({"every-volume", "none"}))
      ->capture_default_str();
  cmd->add_option("--max-volumes", o->max_volumes, "Volume indices must be below this")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--max-payload-bytes", o->max_payload_bytes, "Largest accepted payload_bytes")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--max-header-bytes", o->max_header_bytes, "Largest accepted JSON frame")
      ->check(CLI::Range(size_t{256}, size_t{16} << 20))
      ->capture_default_str();
  cmd->add_option("--max-message-bytes", o->max_message_bytes,
                  "ZMQ_MAXMSGSIZE: larger frames drop the connection unread (default: max payload + 4 KiB)");
  cmd->add_option("--ring", o->ring, "Volumes kept in the device ring buffer; 0: no device stage (ingest only)")
      ->check(CLI::Range(int64_t{0}, int64_t{100000}))
      ->capture_default_str();
  cmd->add_option("--queue", o->queue,
                  "Recorded volumes waiting for the device stage before the oldest is skipped (never for recording)")
      ->check(CLI::Range(size_t{1}, size_t{100000}))
      ->capture_default_str();
  cmd->add_option("--exit-after-runs", o->exit_after_runs,
                  "Stop after this many runs were closed (0: run until signalled)")
      ->capture_default_str();
  cmd->add_flag("--no-motion", o->no_motion, "No live motion correction (it needs the device stage, --ring > 0)");
  cmd->add_option("--motion-ref", o->motion_ref,
                  "Motion reference: a volume index of each run, or a 3D NIfTI on the runs' grid")
      ->capture_default_str();
  cmd->add_flag("--no-listen", o->no_listen, "Do not bind the protocol-1 ROUTER socket (e.g. pyneal only)");
  cmd->add_option("--pyneal", o->pyneal,
                  "Also accept pyneal_scanner on this ZeroMQ PAIR endpoint (docs/pyneal.md), e.g. tcp://0.0.0.0:5556");
  cmd->add_option("--pyneal-run", o->pyneal_run, "Run id of volumes from pyneal")->capture_default_str();
  cmd->add_option("--pyneal-tr", o->pyneal_tr,
                  "TR in seconds for pyneal volumes (overrides the header's; needed if absent)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--pyneal-volumes", o->pyneal_volumes,
                  "Volumes in the pyneal run: the last one is answered STOP and the run is closed")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([o, &globals] {
    if (o->no_listen && o->pyneal.empty()) throw std::invalid_argument("--no-listen needs --pyneal");
    run(*o, globals);
  });
}

RTF_REGISTER_COMMAND(100, setup);

}  // namespace
