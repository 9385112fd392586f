// `rtfmri run [--config session.toml] [flags]`: the live server (stream/live/live_server.hpp, docs/live.md). Flags
// override the config file. Exit status 3 when the server stopped normally but could not write all of its session's
// outputs (docs/live.md, "When a write fails").
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "cli/command_support.hpp"
#include "core/scale/ranks.hpp"
#include "stream/live/live_server.hpp"

namespace {

struct RunCli {
  rtf::cli::PipelineFlags pipeline;  // --config and the stage/output flags (cli/command_support.hpp)
  rtf::stream::LiveServerOptions server;
};

// Where the server listens and records, and its limits ([server] in the session file).
void add_server_options(CLI::App* cmd, RunCli& o) {
  auto& v = o.pipeline.values;
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
  cmd->add_option("--max-payload-bytes", o.server.max_payload_bytes, "Largest accepted payload_bytes")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--max-header-bytes", o.server.max_header_bytes, "Largest accepted JSON frame")
      ->check(CLI::Range(size_t{256}, size_t{16} << 20))
      ->capture_default_str();
  cmd->add_option("--max-message-bytes", o.server.max_message_bytes,
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
}

// The device stage switched off or slowed, and the other receivers (pyneal, AFNI real-time).
void add_input_options(CLI::App* cmd, rtf::stream::LiveServerOptions& o) {
  cmd->add_flag("--no-device", o.no_device, "Ingest and record only: no device, no analysis");
  cmd->add_option("--inject-delay-ms", o.inject_delay_ms,
                  "Testing: extra time per analysed volume (to rehearse falling behind)")
      ->check(rtf::cli::non_negative());
  cmd->add_flag("--no-listen", o.no_listen,
                "Do not bind the protocol-1 ROUTER socket (e.g. pyneal or AFNI real-time only)");
  cmd->add_option("--pyneal", o.pyneal,
                  "Also accept pyneal_scanner on this ZeroMQ PAIR endpoint (docs/pyneal.md), e.g. tcp://0.0.0.0:5560");
  cmd->add_option("--pyneal-run", o.pyneal_run, "Run id of volumes from pyneal")->capture_default_str();
  cmd->add_option("--pyneal-tr", o.pyneal_tr,
                  "TR in seconds for pyneal volumes (overrides the header's; needed if absent)")
      ->check(rtf::cli::positive());
  cmd->add_option("--pyneal-volumes", o.pyneal_volumes,
                  "Volumes in the pyneal run: the last one is answered STOP and the run is closed")
      ->check(rtf::cli::non_negative());
  cmd->add_option("--afni-rt", o.afni_rt,
                  "Also accept AFNI real-time image sources (Dimon -rt, rtfeedme) in place of afni -rt: HOST:PORT of "
                  "the control channel to listen on, e.g. 0.0.0.0:7954 (AFNI's port). The data channel is the port "
                  "the source names (Dimon's default 7953) on the same interface, and must come from the control "
                  "connection's address. Each header starts a run: run-01, run-02, ... in --session (default "
                  "\"afni\"); a run ends at AFNI's end marker or when the source disconnects (docs/afni_rt.md)");
  cmd->add_option("--afni-rt-first-run", o.afni_rt_first_run,
                  "Number of the first AFNI run (run-NN), e.g. to go on in a session directory that has run-01")
      ->check(CLI::Range(0, 99999))
      ->capture_default_str();
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto o = std::make_shared<RunCli>();
  auto* cmd = app.add_subcommand(
      "run", "Live server: receive volumes, record them, run the live pipeline, send feedback (docs/live.md)");
  add_server_options(cmd, *o);
  rtf::cli::add_pipeline_flags(*cmd, o->pipeline);
  add_input_options(cmd, o->server);
  cmd->callback([o, cmd, &globals] {
    auto& server = o->server;
    if (server.no_listen && server.pyneal.empty() && server.afni_rt.empty()) {
      throw std::invalid_argument("--no-listen needs --pyneal or --afni-rt");
    }
    server.config = rtf::cli::pipeline_config_from(o->pipeline, *cmd);
    const int status = rtf::stream::run_live_server(server, [&globals] { return rtf::cli::open_device(globals); });
    if (status != 0) {
      // Everything is stopped and closed; the status is not an exception's 1 (main.cpp).
      std::fflush(stdout);
      rtf::Ranks::finalize();
      std::exit(status);
    }
  });
}

RTF_REGISTER_COMMAND(100, setup);

}  // namespace
