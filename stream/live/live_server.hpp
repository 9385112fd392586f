// The live server behind `rtfmri run`: receives volumes (protocol 1, docs/protocol.md; pyneal, docs/pyneal.md; AFNI's
// real-time protocol from Dimon/rtfeedme, docs/afni_rt.md), records each durably before acknowledging it, and on a
// thread of its own runs the live pipeline (upload, motion correction, smoothing, GLM, CCA, connectivity, feedback
// value) and sends each TR's results to the outputs (ZeroMQ PUB, TCP feedback lines, UDP). Stops on SIGINT/SIGTERM
// (or after config.exit_after_runs runs), then prints the counters and the latency summary (also saved as
// latency_summary.json) and whether every output was written (docs/live.md, "When a write fails").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/device/device_opener.hpp"
#include "stream/pipeline/pipeline_config.hpp"

namespace rtf::stream {

struct LiveServerOptions {
  PipelineConfig config;                    // the effective configuration: the session file's, then the flags
  uint64_t max_payload_bytes = 1ull << 30;  // largest accepted payload_bytes
  size_t max_header_bytes = 64u << 10;      // largest accepted JSON frame
  int64_t max_message_bytes = 0;            // ZMQ_MAXMSGSIZE; 0: the largest payload + 4 KiB
  std::string pyneal;                       // PAIR endpoint for pyneal_scanner; empty: off
  std::string pyneal_run = "run-01";        // run id of pyneal's volumes
  double pyneal_tr = 0.0;                   // > 0: TR of pyneal's volumes, over their header's
  int64_t pyneal_volumes = 0;               // > 0: the last volume is answered STOP and the run closed
  std::string afni_rt;                      // HOST:PORT of the AFNI real-time control channel; empty: off
  int afni_rt_first_run = 1;                // number of the first AFNI run (run-NN)
  bool no_listen = false;                   // no protocol-1 ROUTER socket (pyneal or AFNI only)
  bool no_device = false;                   // ingest and record only: no device, no analysis
  int inject_delay_ms = 0;                  // testing: extra time per analysed volume (falling behind rehearsed)
};

// Exit status of a server that ran and stopped normally but could not write all of its session's outputs (docs/live.md,
// "Exit status"); 1 stays what it is for every command: an error that stopped it.
constexpr int kOutputsLost = 3;

// Runs the server until it is stopped, then prints its summary. `open_device` is called once, after the options were
// checked and before anything listens (not at all with no_device). Returns 0, or kOutputsLost when some of the
// session directory's outputs could not be written; throws for bad options or inputs (a missing T1, a port in use).
int run_live_server(const LiveServerOptions& options, const DeviceOpener& open_device);

}  // namespace rtf::stream
