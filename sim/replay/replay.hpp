// Replaying a 4D image to an ingest server as a scanner would: one volume per TR (or N times faster), through the
// reliable VolumeSender, with optional fault injection, then END_OF_RUN. Used by `rtfmri sim replay`, the tests
// and the load test. docs/simulator.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "core/image/image.hpp"
#include "sim/replay/fault_plan.hpp"
#include "stream/sender/volume_sender.hpp"

namespace rtf::sim {

struct ReplayOptions {
  std::string address = "tcp://127.0.0.1:5555";
  std::string session = "sim";
  std::string run = "run-01";
  double tr_s = 0.0;   // 0: the file's TR (pixdim[4]); must then be positive
  double speed = 1.0;  // N times real time; 0: as fast as the server acknowledges
  int64_t start = 0;   // first volume to send (indices are the file's volume numbers)
  int64_t count = -1;  // volumes to send; -1: to the end of the file
  double resend_timeout_s = 2.0;
  double finish_timeout_s = 60.0;  // waiting for the last ACKs and the END_OF_RUN ACK
  bool end_run = true;             // send END_OF_RUN at the end
  FaultOptions faults;
  std::filesystem::path ack_log;  // if set: one line "run index" per ACKed volume, flushed as it arrives
  // Lockstep: when set, each volume after the first waits (besides its pacing) until handled(previous) is true, where
  // `previous` is the wire index of the volume sent before it; replies are processed meanwhile. E.g. "the server's
  // feedback line for it arrived" (FeedbackLockstep): the server then never has a second volume waiting and analyses
  // every one, however fast or busy the machine is. Waiting longer than lockstep_timeout_s throws std::runtime_error.
  std::function<bool(int64_t previous)> handled;
  double lockstep_timeout_s = 300.0;
};

struct ReplayReport {
  int64_t volumes = 0;  // volumes handed to the sender
  stream::SenderStats stats;
  bool all_acknowledged = false;
  bool run_closed = false;
  bool end_run_requested = true;
  std::vector<std::string> failures;  // volumes given up, and END_OF_RUN problems
  double seconds = 0.0;
  bool ok() const { return all_acknowledged && failures.empty() && (run_closed || !end_run_requested); }
};

// Sends `image` (3D or 4D) to the server. Throws std::invalid_argument for unusable options (no TR, start beyond
// the end, ids the protocol refuses), std::runtime_error when a lockstep wait times out.
ReplayReport replay(const Image& image, const ReplayOptions& options, zmq::context_t& context);

// The protocol header for volume `index` of `image` on the wire as `type` (payload_bytes and checksum unset).
stream::VolumeHeader replay_header(const Image& image, const ReplayOptions& options, int64_t index, DataType type,
                                   double tr_s);

}  // namespace rtf::sim
