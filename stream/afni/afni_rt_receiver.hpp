// AfniRtReceiver: rtfmri in AFNI's place for Dimon / rtfeedme (AFNI's README.realtime; docs/afni_rt.md). Listens on
// the control port (AFNI: 7954); an image source connects, sends one '\0'-terminated string "tcp:HOST:PORT" naming
// the data channel and closes; the receiver then listens on PORT (on its own interface; HOST is the source's idea of
// ours) and accepts the data connection, from the same address as the control connection unless told otherwise.
// On the data connection: a header (afni_rt_header.hpp) ended by '\0', then raw images (slices or volumes, as
// ACQUISITION_TYPE says). Each complete volume goes to the VolumeHandler as a protocol-1 volume: session from the
// options, run ids run-01, run-02, ... (one per header accepted; "-chN" appended per channel when NUM_CHAN > 1),
// consecutive indices. A run ends at the end marker (an image-sized block starting "Et Earello Endorenna
// utulien!!", after which the same connection may carry a new header and run) or when the source disconnects; the
// receiver then closes it through the EndOfRunHandler with the number of volumes handed over. A malformed or
// unsupported header, a datum it cannot carry, a short read or a refused volume: one clear log line, the connection
// closed, volumes already handed over kept (and their run closed). One session at a time, as AFNI. One thread runs
// run(); stop() and counters() may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "stream/afni/afni_rt_header.hpp"
#include "stream/protocol/messages.hpp"
#include "stream/server/volume_handler.hpp"

namespace rtf::stream::afni {

struct AfniRtOptions {
  std::string address = "127.0.0.1";            // IP of the interface both listeners bind ("0.0.0.0": every interface)
  uint16_t control_port = kDefaultControlPort;  // 0: any free port, see control_port()
  std::string session = "afni";                 // session id of every volume (valid_id)
  std::string run_prefix = "run-";              // run ids are run_prefix + two-digit number (valid_id)
  int first_run = 1;                            // number of the first run
  ProtocolLimits limits;                        // max_payload_bytes bounds a volume
  bool same_peer_only = true;  // refuse a data connection from another address than the control connection's
  std::chrono::milliseconds handshake_timeout{60000};  // for the control string, then for the data connection
};

struct AfniRtCounters {
  int64_t control_connections = 0;       // accepted on the control port
  int64_t control_rejected = 0;          // control connections refused (no/garbled string, shm, info program, no data)
  int64_t data_connections = 0;          // data connections accepted
  int64_t foreign_data_connections = 0;  // data connections refused: another address than the control's
  int64_t headers_rejected = 0;          // headers refused (connection closed)
  int64_t runs = 0;                      // runs started (headers accepted)
  int64_t end_markers = 0;               // runs ended by the end marker
  int64_t short_reads = 0;               // data connections that ended inside an image
  int64_t images = 0;                    // images (slices or volumes) read
  int64_t received = 0;                  // volumes completed and handed to the handler
  int64_t acked = 0;                     // of those, accepted (newly recorded or duplicate)
  int64_t duplicates = 0;                // of the accepted, duplicates
  int64_t rejected = 0;                  // volumes the handler refused
  int64_t runs_closed = 0;               // end-of-run accepted by the EndOfRunHandler
};

// Closes a run (IngestCore::handle_end_of_run). May be empty: runs are then left open.
using EndOfRunHandler = std::function<Reply(const EndOfRun& message)>;

class AfniRtReceiver {
 public:
  // Binds the control port at once. Throws std::invalid_argument for invalid options and std::runtime_error naming
  // the address when it cannot bind.
  AfniRtReceiver(AfniRtOptions options, VolumeHandler handler, EndOfRunHandler end_of_run = {});
  ~AfniRtReceiver();
  AfniRtReceiver(const AfniRtReceiver&) = delete;
  AfniRtReceiver& operator=(const AfniRtReceiver&) = delete;

  // Serves image sources until stop(). Never throws for anything a source does.
  void run();
  // Makes run() return (at once, or before it starts). Thread-safe. A run in progress is left open.
  void stop();

  uint16_t control_port() const;  // the port actually bound
  AfniRtCounters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "HOST:PORT" (e.g. "0.0.0.0:7954", "127.0.0.1:7954", "localhost:7954") -> host and port; nullopt if malformed.
std::optional<std::pair<std::string, uint16_t>> parse_host_port(std::string_view text);

// The id of run `number`, channel `channel` (0-based) of `channels`: "run-03", or "run-03-ch2" when channels > 1.
std::string afni_run_id(const std::string& prefix, int number, int channel, int channels);

}  // namespace rtf::stream::afni
