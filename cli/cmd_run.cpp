// `rtfmri run [--config session.toml] [flags]`: the live server. Receives volumes (protocol 1, docs/protocol.md,
// pyneal, or AFNI's real-time protocol from Dimon/rtfeedme, docs/afni_rt.md), records each durably before
// acknowledging it, and on a separate thread runs the live pipeline (upload, motion correction, smoothing, GLM, CCA,
// connectivity, feedback value) and sends each TR's results to the outputs (ZeroMQ PUB, TCP feedback lines, UDP).
// Flags override the config file. Stops on SIGINT/SIGTERM (or after --exit-after-runs runs), then prints counters and
// the latency summary (also saved as latency_summary.json) and whether every output was written (exit status 3 when
// not: docs/live.md, "When a write fails").
#include <fmt/format.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

#include "cli/cli_support.hpp"
#include "cli/command_registry.hpp"
#include "cli/option_checks.hpp"
#include "cli/pipeline_flags.hpp"
#include "core/scale/ranks.hpp"
#include "stream/afni/afni_rt_receiver.hpp"
#include "stream/output/output_failures.hpp"
#include "stream/pipeline/live_stage.hpp"
#include "stream/pipeline/pipeline_config.hpp"
#include "stream/pipeline/warm_up.hpp"
#include "stream/pyneal/pyneal_receiver.hpp"
#include "stream/server/ingest_core.hpp"
#include "stream/server/latency_log.hpp"
#include "stream/server/zmq_ingest_server.hpp"

namespace {

using rtf::stream::PipelineConfig;

struct RunCli {
  rtf::cli::PipelineFlags pipeline;  // --config and the stage/output flags (cli/pipeline_flags.hpp)
  uint64_t max_payload_bytes = 1ull << 30;
  size_t max_header_bytes = 64u << 10;
  int64_t max_message_bytes = 0;
  std::string pyneal;  // PAIR endpoint for pyneal_scanner; empty: off
  std::string pyneal_run = "run-01";
  double pyneal_tr = 0.0;
  int64_t pyneal_volumes = 0;
  std::string afni_rt;  // HOST:PORT of the AFNI real-time control channel; empty: off
  int afni_rt_first_run = 1;
  bool no_listen = false;
  bool no_device = false;
  int inject_delay_ms = 0;
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

void print_summary(const rtf::stream::IngestStats& s, const rtf::stream::LiveStageCounters& live,
                   const std::map<std::string, std::vector<int64_t>>& skipped,
                   const std::map<std::string, rtf::stream::LiveStage::NotAnalysed>& not_analysed) {
  fmt::print("ingest: {} messages, {} volumes recorded, {} duplicates, {} NACKs, {} runs closed\n", s.messages,
             s.recorded, s.duplicates, s.nacked, s.runs_closed);
  for (const auto& [code, n] : s.nacks_by_code) fmt::print("  NACK {}: {}\n", code, n);
  fmt::print(
      "device: {} volumes uploaded, {} analysed, {} skipped (a newer volume was waiting), {} dropped before the device "
      "stage (queue full), {} failed, {} recorded only (runs not analysed live)\n",
      live.uploaded, live.analysed, live.skipped, s.queue_dropped, live.failed, live.not_analysed);
  for (const auto& [run, indices] : skipped) {
    fmt::print("  skipped in run {}: volumes {}\n", run, rtf::stream::format_index_ranges(indices));
  }
  for (const auto& [run, n] : not_analysed) {
    fmt::print("  run {}: {} volumes recorded but not analysed live: {}\n", run, n.volumes, n.reason);
  }
}

// Exit status of a server that ran and stopped normally but could not write all of its session's outputs (docs/live.md,
// "Exit status"); 1 stays what it is for every command: an error that stopped it.
constexpr int kOutputsLost = 3;

// Closes latency.jsonl, writes latency_summary.json (atomically), and prints what of the session directory's outputs
// could not be written (every writer reports to output_failures()). Returns the exit status: 0 or kOutputsLost.
int report_outputs(const std::filesystem::path& session_dir, rtf::stream::LatencyLog& latency) {
  using rtf::stream::output_failures;
  latency.close();  // a failure is logged and reported by the file itself
  const std::filesystem::path summary = session_dir / "latency_summary.json";
  rtf::stream::write_output(summary, "latency summary", [&] { latency.write_summary(summary); });
  const std::vector<std::string> lost = output_failures().lines(session_dir);
  if (lost.empty()) {
    fmt::print("outputs: all written\n");
    return 0;
  }
  fmt::print("outputs: NOT ALL WRITTEN ({} files; exit status {}):\n", lost.size(), kOutputsLost);
  for (const std::string& line : lost) fmt::print("  {}\n", line);
  if (latency.rows_lost() > 0) {
    fmt::print("  latency.jsonl lacks {} of its {} rows (lost rows); the latency summary counts all {} volumes\n",
               latency.rows_lost(), latency.rows_lost() + latency.rows_written(), latency.records().size());
  }
  spdlog::error("{} of the session's outputs not written whole (listed in the summary); exit status {}", lost.size(),
                kOutputsLost);
  return kOutputsLost;
}

int run(const RunCli& o, const CLI::App& cmd, const rtf::cli::GlobalOptions& globals) {
  using namespace rtf::stream;
  const PipelineConfig c = rtf::cli::pipeline_config_from(o.pipeline, cmd);
  validate(c);
  check_registration_inputs(c);  // a missing T1 or template fails now, before anything is bound or written
  std::optional<rtf::ImageHeader> warm;
  if (!c.warm.empty() && !o.no_device) warm = warm_grid(c.warm);  // a bad spec fails before binding
  IngestOptions ingest;
  ingest.limits.max_volumes = c.max_volumes;
  ingest.limits.max_payload_bytes = o.max_payload_bytes;
  ingest.limits.max_header_bytes = o.max_header_bytes;
  ingest.recorder.fsync = c.fsync == "none" ? FsyncPolicy::kNone : FsyncPolicy::kEveryVolume;
  ingest.recorder.session_id = c.session;
  ingest.queue_capacity = c.queue;
  ingest.recorder.max_open_runs = c.max_open_runs;
  ingest.recorder.run_idle_close = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(c.run_idle_close_s));

  const sigset_t stop_signals = block_stop_signals();
  std::unique_ptr<rtf::Device> device;
  if (!o.no_device) device = rtf::cli::open_device(globals);
  if (device && warm) {
    // Before anything listens: a scanner that connects now finds every kernel built.
    const auto& g = *warm;
    spdlog::info("warm-up: building every stage's kernels for {}x{}x{} voxels of {:.3g}x{:.3g}x{:.3g} mm", g.dims[0],
                 g.dims[1], g.dims[2], g.voxel_mm[0], g.voxel_mm[1], g.voxel_mm[2]);
    const WarmUpReport w = warm_up(*device, c, g);
    spdlog::info("warm-up: done in {:.2f} s ({} kernel programs compiled, {} loaded from the disk cache; stages: {})",
                 w.seconds, w.compiled, w.from_disk_cache, w.stages);
  }
  IngestCore core(c.session_dir, ingest);
  if (!c.session.empty()) {
    std::string why;
    if (!core.bind_session(c.session, why)) throw std::runtime_error(why);
  }
  LatencyLog latency(core.session_dir() / "latency.jsonl");
  zmq::context_t context(1);
  std::unique_ptr<ZmqIngestServer> server;
  if (!o.no_listen) {
    ZmqServerOptions server_options;
    server_options.address = c.listen;
    server_options.max_message_bytes = o.max_message_bytes;
    server = std::make_unique<ZmqIngestServer>(context, core, server_options);
    spdlog::info("listening on {} (max message {} bytes), recording into {} (fsync: {})", server->endpoint(),
                 server->max_message_bytes(), core.session_dir().string(), c.fsync);
  }
  std::unique_ptr<pyneal::PynealReceiver> pyneal_receiver;
  const std::string pyneal_session = c.session.empty() ? "pyneal" : c.session;
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

  std::unique_ptr<afni::AfniRtReceiver> afni_receiver;
  if (!o.afni_rt.empty()) {
    const auto where = afni::parse_host_port(o.afni_rt);
    if (!where) throw std::invalid_argument(fmt::format("--afni-rt \"{}\" is not HOST:PORT", o.afni_rt));
    afni::AfniRtOptions a;
    a.address = where->first;
    a.control_port = where->second;
    a.session = c.session.empty() ? "afni" : c.session;
    a.first_run = o.afni_rt_first_run;
    a.limits = ingest.limits;
    afni_receiver = std::make_unique<afni::AfniRtReceiver>(
        a, core.as_handler(), [&core](const EndOfRun& e) { return core.handle_end_of_run(e); });
  }

  std::unique_ptr<LiveOutputs> outputs;
  std::unique_ptr<LiveStage> live;
  std::thread live_thread;
  if (device) {
    outputs = std::make_unique<LiveOutputs>(context, c);
    if (outputs->publisher()) spdlog::info("results: ZeroMQ PUB on {}", outputs->publisher()->endpoint());
    if (outputs->tcp()) spdlog::info("feedback: TCP lines on {}", c.feedback_tcp);
    live = std::make_unique<LiveStage>(*device, c, core.queue(), latency, core.session_dir(), outputs.get());
    live->set_ingest_stats([&core] { return core.quick_stats(); });
    live->set_run_ended([&core](const std::string& run) { return core.run_ended(run); });
    if (o.inject_delay_ms > 0) live->set_injected_delay(std::chrono::milliseconds(o.inject_delay_ms));
    live_thread = std::thread([&] { live->run(); });
  } else {
    // Ingest only: drain the queue so that latencies are still logged.
    live_thread = std::thread([&] {
      while (true) {
        auto v = core.queue().pop(std::chrono::milliseconds(100));
        if (!v) {
          if (core.queue().closed()) return;
          continue;
        }
        latency.add(ingest_latency(*v));
      }
    });
  }
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

  std::thread afni_thread;
  if (afni_receiver) afni_thread = std::thread([&] { afni_receiver->run(); });

  while (true) {
    timespec wait{0, 50'000'000};
    siginfo_t info;
    if (sigtimedwait(&stop_signals, &info, &wait) > 0) {
      spdlog::info("signal {}: stopping", info.si_signo);
      break;
    }
    if (c.exit_after_runs > 0 && core.stats().runs_closed >= c.exit_after_runs) {
      spdlog::info("{} runs closed: stopping", c.exit_after_runs);
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
    const auto pc = pyneal_receiver->counters();
    fmt::print(
        "pyneal: {} connections, {} handshakes, {} volumes received, {} acknowledged ({} duplicates), {} rejected\n",
        pc.connections, pc.handshakes, pc.received, pc.acked, pc.duplicates, pc.rejected);
  }
  if (afni_receiver) {
    afni_receiver->stop();
    afni_thread.join();
    const auto ac = afni_receiver->counters();
    fmt::print(
        "afni-rt: {} control connections ({} refused), {} runs ({} closed), {} volumes received, {} acknowledged ({} "
        "duplicates), {} rejected, {} headers refused, {} short reads\n",
        ac.control_connections, ac.control_rejected, ac.runs, ac.runs_closed, ac.received, ac.acked, ac.duplicates,
        ac.rejected, ac.headers_rejected, ac.short_reads);
  }
  core.queue().close();
  live_thread.join();
  if (outputs) outputs->stop();
  for (const std::string& line : core.write_open_runs()) fmt::print("{}\n", line);
  print_summary(core.stats(), live ? live->counters() : LiveStageCounters{},
                live ? live->skipped_volumes() : std::map<std::string, std::vector<int64_t>>{},
                live ? live->not_analysed_runs() : std::map<std::string, rtf::stream::LiveStage::NotAnalysed>{});
  const std::string summary = latency.summary();
  if (!summary.empty()) fmt::print("latency per volume:\n{}", summary);
  live.reset();  // its registration thread's files are written (or reported) before the outputs are reported
  return report_outputs(core.session_dir(), latency);
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto o = std::make_shared<RunCli>();
  auto* cmd = app.add_subcommand(
      "run", "Live server: receive volumes, record them, run the live pipeline, send feedback (docs/live.md)");
  auto& v = o->pipeline.values;
  cmd->add_option("--listen", v.listen, "ZeroMQ ROUTER endpoint to bind (protocol: docs/protocol.md)")
      ->capture_default_str();
  cmd->add_option("--session-dir", v.session_dir, "Session directory (created if needed; docs/recording.md)");
  cmd->add_option("--session", v.session,
                  "Session id this server records (default: the session of the first volume received)");
  cmd->add_option("--fsync", v.fsync,
                  "every-volume: fdatasync before each ACK (survives power loss); none: survives a process crash only")
      ->check(CLI::IsMember({"every-volume", "none"}))
      ->capture_default_str();
  cmd->add_option("--max-volumes", v.max_volumes, "Volume indices must be below this")
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
  cmd->add_option("--queue", v.queue,
                  "Recorded volumes waiting for the device stage before the oldest is dropped for it (never for "
                  "recording)")
      ->check(CLI::Range(size_t{1}, size_t{100000}))
      ->capture_default_str();
  cmd->add_option("--max-open-runs", v.max_open_runs,
                  "Runs whose session files are open at once (two descriptors each); the least recently used runs' "
                  "files close and reopen on their next volume ([server] max_open_runs; docs/recording.md)")
      ->check(CLI::Range(size_t{1}, size_t{100000}))
      ->capture_default_str();
  cmd->add_option("--run-idle-close-s", v.run_idle_close_s,
                  "Close a run's session files after this many seconds without a volume; 0: never "
                  "([server] run_idle_close_s)")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--warm", v.warm,
                  "The runs' grid, known before the scan: NXxNYxNZ@MM (e.g. 64x64x33@3, or @3x3x3.5) or a NIfTI on "
                  "that grid (e.g. a previous run's bold.nii.gz). Every stage's kernels are built before the server "
                  "listens, so that no TR is lost to compilation ([run] warm)");
  cmd->add_option("--exit-after-runs", v.exit_after_runs,
                  "Stop after this many runs were closed (0: run until signalled)")
      ->capture_default_str();
  cmd->add_option("--max-live-runs", v.max_live_runs,
                  "Runs analysed on the device at once, each with its own pipeline; a run that starts while that many "
                  "are analysed is recorded only (its feedback lines say \"recorded-only\"; analyse it afterwards "
                  "with rtfmri replay) ([server] max_live_runs; docs/live.md)")
      ->check(CLI::Range(int64_t{1}, int64_t{64}))
      ->capture_default_str();
  cmd->add_option("--live-run-idle-s", v.live_run_idle_s,
                  "A run analysed live with no volume for this long gives its place to a new run (a run closed by its "
                  "end_of_run gives it at once) ([server] live_run_idle_s)")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  rtf::cli::add_pipeline_flags(*cmd, o->pipeline);
  cmd->add_flag("--no-device", o->no_device, "Ingest and record only: no device, no analysis");
  cmd->add_option("--inject-delay-ms", o->inject_delay_ms,
                  "Testing: extra time per analysed volume (to rehearse falling behind)")
      ->check(rtf::cli::non_negative());
  cmd->add_flag("--no-listen", o->no_listen,
                "Do not bind the protocol-1 ROUTER socket (e.g. pyneal or AFNI real-time only)");
  cmd->add_option("--pyneal", o->pyneal,
                  "Also accept pyneal_scanner on this ZeroMQ PAIR endpoint (docs/pyneal.md), e.g. tcp://0.0.0.0:5560");
  cmd->add_option("--pyneal-run", o->pyneal_run, "Run id of volumes from pyneal")->capture_default_str();
  cmd->add_option("--pyneal-tr", o->pyneal_tr,
                  "TR in seconds for pyneal volumes (overrides the header's; needed if absent)")
      ->check(rtf::cli::positive());
  cmd->add_option("--pyneal-volumes", o->pyneal_volumes,
                  "Volumes in the pyneal run: the last one is answered STOP and the run is closed")
      ->check(rtf::cli::non_negative());
  cmd->add_option("--afni-rt", o->afni_rt,
                  "Also accept AFNI real-time image sources (Dimon -rt, rtfeedme) in place of afni -rt: HOST:PORT of "
                  "the control channel to listen on, e.g. 0.0.0.0:7954 (AFNI's port). The data channel is the port "
                  "the source names (Dimon's default 7953) on the same interface, and must come from the control "
                  "connection's address. Each header starts a run: run-01, run-02, ... in --session (default "
                  "\"afni\"); a run ends at AFNI's end marker or when the source disconnects (docs/afni_rt.md)");
  cmd->add_option("--afni-rt-first-run", o->afni_rt_first_run,
                  "Number of the first AFNI run (run-NN), e.g. to go on in a session directory that has run-01")
      ->check(CLI::Range(0, 99999))
      ->capture_default_str();
  cmd->callback([o, cmd, &globals] {
    if (o->no_listen && o->pyneal.empty() && o->afni_rt.empty()) {
      throw std::invalid_argument("--no-listen needs --pyneal or --afni-rt");
    }
    if (const int status = run(*o, *cmd, globals); status != 0) {
      // Everything is stopped and closed; the status is not an exception's 1 (main.cpp).
      std::fflush(stdout);
      rtf::Ranks::finalize();
      std::exit(status);
    }
  });
}

RTF_REGISTER_COMMAND(100, setup);

}  // namespace
