// The live server's wiring (stream/live/live_server.hpp): ingest and recorder, the receivers and their threads, the
// device stage or an ingest-only drain, the stop signals, and the shutdown summary with its exit status.
#include "stream/live/live_server.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

#include "core/util/stop_signals.hpp"
#include "stream/afni/afni_rt_receiver.hpp"
#include "stream/output/output_failures.hpp"
#include "stream/pipeline/live_stage.hpp"
#include "stream/pipeline/warm_up.hpp"
#include "stream/pyneal/pyneal_receiver.hpp"
#include "stream/server/ingest_core.hpp"
#include "stream/server/latency_log.hpp"
#include "stream/server/zmq_ingest_server.hpp"

namespace rtf::stream {
namespace {

IngestOptions ingest_options(const LiveServerOptions& o) {
  const PipelineConfig& c = o.config;
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
  return ingest;
}

// Before anything listens: a scanner that connects now finds every kernel built.
void warm_up_kernels(Device& device, const PipelineConfig& c, const ImageHeader& g) {
  spdlog::info("warm-up: building every stage's kernels for {}x{}x{} voxels of {:.3g}x{:.3g}x{:.3g} mm", g.dims[0],
               g.dims[1], g.dims[2], g.voxel_mm[0], g.voxel_mm[1], g.voxel_mm[2]);
  const WarmUpReport w = warm_up(device, c, g);
  spdlog::info("warm-up: done in {:.2f} s ({} kernel programs compiled, {} loaded from the disk cache; stages: {})",
               w.seconds, w.compiled, w.from_disk_cache, w.stages);
}

// The receivers, each with the thread it runs on once started. Declared before the device stage, so that they are
// destroyed after it (their threads are joined by stop_receivers first).
struct Receivers {
  std::unique_ptr<ZmqIngestServer> zmq;
  std::unique_ptr<pyneal::PynealReceiver> pyneal;
  std::unique_ptr<afni::AfniRtReceiver> afni;
  std::string pyneal_session;
  std::thread zmq_thread, pyneal_thread, afni_thread;
};

void make_receivers(Receivers& r, zmq::context_t& context, const LiveServerOptions& o, const IngestOptions& ingest,
                    IngestCore& core) {
  const PipelineConfig& c = o.config;
  if (!o.no_listen) {
    ZmqServerOptions server_options;
    server_options.address = c.listen;
    server_options.max_message_bytes = o.max_message_bytes;
    r.zmq = std::make_unique<ZmqIngestServer>(context, core, server_options);
    spdlog::info("listening on {} (max message {} bytes), recording into {} (fsync: {})", r.zmq->endpoint(),
                 r.zmq->max_message_bytes(), core.session_dir().string(), c.fsync);
  }
  r.pyneal_session = c.session.empty() ? "pyneal" : c.session;
  if (!o.pyneal.empty()) {
    pyneal::PynealOptions p;
    p.address = o.pyneal;
    p.session = r.pyneal_session;
    p.run = o.pyneal_run;
    if (o.pyneal_tr > 0) p.tr_override_s = o.pyneal_tr;
    p.limits = ingest.limits;
    p.max_message_bytes = o.max_message_bytes;
    p.stop_after = o.pyneal_volumes;
    p.return_after_stop = o.pyneal_volumes > 0;
    r.pyneal = std::make_unique<pyneal::PynealReceiver>(context, p, core.as_handler());
    spdlog::info("pyneal: PAIR socket on {} (session {}, run {}{})", r.pyneal->endpoint(), r.pyneal_session,
                 o.pyneal_run, o.pyneal_volumes > 0 ? fmt::format(", {} volumes", o.pyneal_volumes) : "");
  }
  if (!o.afni_rt.empty()) {
    const auto where = afni::parse_host_port(o.afni_rt);
    if (!where) throw std::invalid_argument(fmt::format("--afni-rt \"{}\" is not HOST:PORT", o.afni_rt));
    afni::AfniRtOptions a;
    a.address = where->first;
    a.control_port = where->second;
    a.session = c.session.empty() ? "afni" : c.session;
    a.first_run = o.afni_rt_first_run;
    a.limits = ingest.limits;
    r.afni = std::make_unique<afni::AfniRtReceiver>(a, core.as_handler(),
                                                    [&core](const EndOfRun& e) { return core.handle_end_of_run(e); });
  }
}

void start_receivers(Receivers& r, const LiveServerOptions& o, IngestCore& core) {
  if (r.zmq) r.zmq_thread = std::thread([&r] { r.zmq->run(); });
  if (r.pyneal) {
    // pyneal has no end-of-run message: after STOP went out for the last volume, close the run here.
    r.pyneal_thread = std::thread([&r, &o, &core] {
      r.pyneal->run();
      if (!r.pyneal->stop_sent() || o.pyneal_volumes <= 0) return;
      const Reply reply = core.handle_end_of_run(EndOfRun{1, r.pyneal_session, o.pyneal_run, o.pyneal_volumes});
      if (const auto* nack = std::get_if<Nack>(&reply)) spdlog::error("pyneal run not closed: {}", nack->reason);
    });
  }
  if (r.afni) r.afni_thread = std::thread([&r] { r.afni->run(); });
}

// Stops and joins the receivers, printing the counters of pyneal's and AFNI's.
void stop_receivers(Receivers& r) {
  if (r.zmq) {
    r.zmq->stop();
    r.zmq_thread.join();
  }
  if (r.pyneal) {
    r.pyneal->stop();
    r.pyneal_thread.join();
    const auto pc = r.pyneal->counters();
    fmt::print(
        "pyneal: {} connections, {} handshakes, {} volumes received, {} acknowledged ({} duplicates), {} rejected\n",
        pc.connections, pc.handshakes, pc.received, pc.acked, pc.duplicates, pc.rejected);
  }
  if (r.afni) {
    r.afni->stop();
    r.afni_thread.join();
    const auto ac = r.afni->counters();
    fmt::print(
        "afni-rt: {} control connections ({} refused), {} runs ({} closed), {} volumes received, {} acknowledged ({} "
        "duplicates), {} rejected, {} headers refused, {} short reads\n",
        ac.control_connections, ac.control_rejected, ac.runs, ac.runs_closed, ac.received, ac.acked, ac.duplicates,
        ac.rejected, ac.headers_rejected, ac.short_reads);
  }
}

// Ingest only (no device): drains the queue so that latencies are still logged.
void drain_queue(IngestCore& core, LatencyLog& latency) {
  while (true) {
    auto v = core.queue().pop(std::chrono::milliseconds(100));
    if (!v) {
      if (core.queue().closed()) return;
      continue;
    }
    latency.add(ingest_latency(*v));
  }
}

// Until SIGINT/SIGTERM, or until exit_after_runs runs were closed.
void wait_for_stop(const sigset_t& stop_signals, const PipelineConfig& c, IngestCore& core) {
  while (true) {
    if (const auto signal = wait_for_stop_signal(stop_signals, std::chrono::milliseconds(50))) {
      spdlog::info("signal {}: stopping", *signal);
      return;
    }
    if (c.exit_after_runs > 0 && core.stats().runs_closed >= c.exit_after_runs) {
      spdlog::info("{} runs closed: stopping", c.exit_after_runs);
      return;
    }
  }
}

void print_summary(const IngestStats& s, const LiveStage* live) {
  const LiveStageCounters counters = live ? live->counters() : LiveStageCounters{};
  fmt::print("ingest: {} messages, {} volumes recorded, {} duplicates, {} NACKs, {} runs closed\n", s.messages,
             s.recorded, s.duplicates, s.nacked, s.runs_closed);
  for (const auto& [code, n] : s.nacks_by_code) fmt::print("  NACK {}: {}\n", code, n);
  fmt::print(
      "device: {} volumes uploaded, {} analysed, {} skipped (a newer volume was waiting), {} dropped before the device "
      "stage (queue full), {} failed, {} recorded only (runs not analysed live)\n",
      counters.uploaded, counters.analysed, counters.skipped, s.queue_dropped, counters.failed, counters.not_analysed);
  if (!live) return;
  for (const auto& [run, indices] : live->skipped_volumes()) {
    fmt::print("  skipped in run {}: volumes {}\n", run, format_index_ranges(indices));
  }
  for (const auto& [run, n] : live->not_analysed_runs()) {
    fmt::print("  run {}: {} volumes recorded but not analysed live: {}\n", run, n.volumes, n.reason);
  }
}

// Closes latency.jsonl, writes latency_summary.json (atomically), and prints what of the session directory's outputs
// could not be written (every writer reports to output_failures()). Returns the exit status: 0 or kOutputsLost.
int report_outputs(const std::filesystem::path& session_dir, LatencyLog& latency) {
  latency.close();  // a failure is logged and reported by the file itself
  const std::filesystem::path summary = session_dir / "latency_summary.json";
  write_output(summary, "latency summary", [&] { latency.write_summary(summary); });
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

}  // namespace

int run_live_server(const LiveServerOptions& o, const DeviceOpener& open_device) {
  const PipelineConfig& c = o.config;
  validate(c);
  check_registration_inputs(c);  // a missing T1 or template fails now, before anything is bound or written
  std::optional<ImageHeader> warm;
  if (!c.warm.empty() && !o.no_device) warm = warm_grid(c.warm);  // a bad spec fails before binding
  const IngestOptions ingest = ingest_options(o);

  const sigset_t stop_signals = block_stop_signals();
  std::unique_ptr<Device> device;
  if (!o.no_device) device = open_device();
  if (device && warm) warm_up_kernels(*device, c, *warm);
  IngestCore core(c.session_dir, ingest);
  if (!c.session.empty()) {
    std::string why;
    if (!core.bind_session(c.session, why)) throw std::runtime_error(why);
  }
  LatencyLog latency(core.session_dir() / "latency.jsonl");
  zmq::context_t context(1);
  Receivers receivers;
  make_receivers(receivers, context, o, ingest, core);

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
    live_thread = std::thread([&] { drain_queue(core, latency); });
  }
  start_receivers(receivers, o, core);

  wait_for_stop(stop_signals, c, core);
  stop_receivers(receivers);
  core.queue().close();
  live_thread.join();
  if (outputs) outputs->stop();
  for (const std::string& line : core.write_open_runs()) fmt::print("{}\n", line);
  print_summary(core.stats(), live.get());
  const std::string summary = latency.summary();
  if (!summary.empty()) fmt::print("latency per volume:\n{}", summary);
  live.reset();  // its registration thread's files are written (or reported) before the outputs are reported
  return report_outputs(core.session_dir(), latency);
}

}  // namespace rtf::stream
