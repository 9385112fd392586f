// VolumeSender: the reliable sending side of protocol 1 (docs/protocol.md §4) over a ZeroMQ DEALER. It keeps every
// volume until the server ACKs it, resends after a timeout, after a reconnect and after a NACK for corruption in
// transit, gives up on a volume only for NACKs that a resend cannot fix (and reports why), and closes a run with
// END_OF_RUN once everything is acknowledged. Single-threaded: call poll() while waiting. Fault injection for the
// simulator (drop, duplicate, corrupt) acts on one transmission and never on the kept copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "stream/protocol/messages.hpp"
#include "stream/protocol/volume_header.hpp"

namespace rtf::stream {

// A volume ready to send: header (payload_bytes and checksum filled by seal_volume) and payload.
struct OutgoingVolume {
  VolumeHeader header;
  std::vector<std::byte> payload;
};

// Sets header.payload_bytes and header.checksum from the payload.
void seal_volume(OutgoingVolume& volume);

// What happens to a volume's first transmission (faults for testing; the kept copy stays intact).
enum class Tamper {
  kNone,
  kDrop,            // not transmitted: only the resend timeout delivers it
  kDuplicate,       // transmitted twice back to back
  kCorruptHeader,   // one header byte replaced by 0xFF (invalid UTF-8: the server cannot read the header)
  kCorruptPayload,  // one payload bit flipped (the server's CRC check NACKs it)
};

struct SenderOptions {
  std::string address = "tcp://127.0.0.1:5555";
  double resend_timeout_s = 2.0;  // no reply within this: transmit again
  int max_attempts = 20;          // transmissions of one volume before it is reported as failed
  size_t max_in_flight = 256;     // unacknowledged volumes before send() waits for replies
  uint64_t seed = 1;              // which byte/bit Tamper corrupts
};

struct SenderStats {
  int64_t transmissions = 0;   // volume messages put on the wire (resends and duplicates included)
  int64_t resends = 0;         // transmissions after the first of a volume
  int64_t acked = 0;           // volumes acknowledged (first ACK of each)
  int64_t duplicate_acks = 0;  // ACKs flagged duplicate, or ACKs for volumes already acknowledged
  int64_t nacks = 0;           // NACKs received
  int64_t unmatched = 0;       // replies that matched no pending volume or could not be read
  int64_t reconnects = 0;
  int64_t failed = 0;  // volumes given up
  std::map<std::string, int64_t> nacks_by_code;
};

class VolumeSender {
 public:
  VolumeSender(zmq::context_t& context, SenderOptions options);

  // Keeps the volume and transmits it (its first transmission treated as `tamper` says). While max_in_flight
  // volumes are unacknowledged, waits for replies first.
  void send(OutgoingVolume volume, Tamper tamper = Tamper::kNone);

  // Handles replies arriving within wait_s (at least one poll), and resends volumes whose reply is overdue.
  void poll(double wait_s);
  // The same, returning as soon as a wait brought at least one reply (the scanner watch takes each ACK as it comes).
  void poll_until_reply(double wait_s);

  // Closes the connection (discarding anything ZeroMQ had queued) and opens a new one; every unacknowledged
  // volume is transmitted again.
  void reconnect();

  // Waits (polling) until no volume is pending or timeout_s passed; true if none is pending.
  bool drain(double timeout_s);

  // Drains, then sends END_OF_RUN and waits for its ACK, resending it (and any volume the server reports
  // missing that is still held) until timeout_s. False with `error` set if the run could not be closed.
  bool finish_run(const std::string& session, const std::string& run, int64_t num_volumes, double timeout_s,
                  std::string& error);

  size_t pending() const { return pending_.size(); }
  const SenderStats& stats() const { return stats_; }
  // Volumes given up, with the reason.
  const std::vector<std::string>& failures() const { return failures_; }
  // (run, index) of every volume acknowledged so far, in ACK order.
  const std::vector<std::pair<std::string, int64_t>>& acknowledged() const { return acknowledged_; }

 private:
  struct Pending {
    OutgoingVolume volume;
    std::string header_text;
    double last_sent_s = 0.0;
    int attempts = 0;
    bool last_was_tampered = false;
  };
  using Key = std::pair<std::string, int64_t>;  // (run, index)

  void open_socket();
  void poll_for(double wait_s, bool until_reply);
  bool transmit(std::span<const std::byte> header, std::span<const std::byte> payload);
  void transmit_intact(Pending& p);
  void handle_reply(std::string_view text);
  void resend_overdue();
  void fail(const Key& key, const std::string& why);

  zmq::context_t& context_;
  SenderOptions options_;
  zmq::socket_t socket_;
  std::map<Key, Pending> pending_;
  std::map<std::string, std::optional<Reply>> end_of_run_reply_;  // run -> latest reply to its END_OF_RUN
  std::vector<std::string> failures_;
  std::vector<std::pair<std::string, int64_t>> acknowledged_;
  SenderStats stats_;
  uint64_t rng_state_;
};

}  // namespace rtf::stream
