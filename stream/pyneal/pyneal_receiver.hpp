// PynealReceiver: rtfmri's end of pyneal's scanner socket (docs/pyneal.md). Binds a ZeroMQ PAIR socket, echoes
// the sender's handshake string, turns each [JSON header, raw C-ordered array] into a protocol-1 volume for a
// VolumeHandler, and answers every message with one string ("received volIdx N", a NACK reason, and "STOP" when
// the sender should stop). One thread runs run(); stop() and counters() may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "core/util/rate_limited_log.hpp"
#include "stream/protocol/volume_header.hpp"
#include "stream/server/volume_handler.hpp"

namespace rtf::stream::pyneal {

struct PynealOptions {
  // Endpoint to bind: pyneal_scanner's pynealSocketHost/Port. 5555 is pyneal's usual port and protocol 1's default
  // too, so one of them needs another port when both run. "tcp://127.0.0.1:*" picks a free port, see endpoint().
  std::string address = "tcp://127.0.0.1:5555";
  std::string session = "pyneal";       // session id of every volume (valid_id)
  std::string run = "run-01";           // run id of every volume (valid_id)
  std::optional<double> tr_override_s;  // TR (s) used instead of the header's "TR" (needed when it has none)
  ProtocolLimits limits;                // max_volumes (volIdx bound), max_payload_bytes, max_header_bytes
  int64_t max_message_bytes = 0;        // ZMQ_MAXMSGSIZE per frame; 0: max(payload, header) limit + 4 KiB
  int64_t stop_after = 0;               // volumes in the run: the reply to volIdx stop_after-1 says STOP, and volIdx
                           // >= stop_after is refused with STOP; 0: never (until the handler closes the run)
  bool return_after_stop = false;  // run() returns once a STOP reply has been sent
  int poll_ms = 50;                // how often the loop checks for stop()
  int heartbeat_ms = 0;            // ZMTP heartbeat interval, peer dropped after 3 silent intervals; 0: off (old
                                   // libzmq on a console may not know heartbeats; TCP keepalive is always on)
  int linger_ms = 1000;            // how long closing the socket waits to deliver the last reply
};

// Counters since construction; each is updated before the reply it counts is sent.
struct PynealCounters {
  int64_t connections = 0;  // TCP/IPC connections accepted (a second one while one is attached is never heard)
  int64_t disconnects = 0;  // connections closed
  int64_t handshakes = 0;   // handshake strings echoed
  int64_t received = 0;     // volumes received (header + data)
  int64_t acked = 0;        // volumes the handler accepted (newly recorded or duplicate)
  int64_t duplicates = 0;   // of those, duplicates
  int64_t rejected = 0;     // volumes and messages answered with a NACK, and dropped lone headers
  int64_t stops = 0;        // replies that carried STOP
};

class PynealReceiver {
 public:
  // Binds at once, on its own ZeroMQ context (or on `context`, which must outlive the receiver). Throws
  // std::invalid_argument for invalid options (session/run ids, TR override, stop_after) and std::runtime_error
  // naming the address when it cannot bind.
  PynealReceiver(PynealOptions options, VolumeHandler handler);
  PynealReceiver(zmq::context_t& context, PynealOptions options, VolumeHandler handler);
  ~PynealReceiver();
  PynealReceiver(const PynealReceiver&) = delete;
  PynealReceiver& operator=(const PynealReceiver&) = delete;

  // Receives and answers messages until stop() (or, with return_after_stop, until STOP was sent). Never throws
  // for anything a sender does; every rejection is logged (spdlog) and answered.
  void run();
  // Makes run() return within one poll interval. Thread-safe; may be called before run().
  void stop() { stop_.store(true); }

  const std::string& endpoint() const { return endpoint_; }  // the address actually bound
  int64_t max_message_bytes() const { return max_message_bytes_; }
  PynealCounters counters() const;
  bool stop_sent() const { return stops_.load() > 0; }  // a STOP reply has been sent

 private:
  using Frames = std::vector<zmq::message_t>;
  PynealReceiver(std::unique_ptr<zmq::context_t> owned, zmq::context_t* context, PynealOptions options,
                 VolumeHandler handler);
  void handle(Frames& frames);
  // Handles one volume (header text + data) and returns the reply text.
  std::string handle_volume(std::string_view header, std::span<const std::byte> data, int64_t received_ns);
  std::string reject(const std::optional<int64_t>& index, ErrorCode code, const std::string& reason, bool stop);
  void reply(const std::string& text);
  void handle_monitor_event();

  std::unique_ptr<zmq::context_t> owned_context_;  // set by the constructor without a context
  PynealOptions options_;
  VolumeHandler handler_;
  zmq::socket_t socket_;
  zmq::socket_t monitor_;  // connection events of socket_ (ZMQ_EVENT_ACCEPTED / DISCONNECTED)
  std::string endpoint_;
  int64_t max_message_bytes_ = 0;
  std::optional<std::string> pending_header_;  // a header sent alone (no SNDMORE); the next frame is its data
  bool warned_ignored_fields_ = false;         // logged once per receiver
  bool warned_tr_ms_ = false;
  bool warned_tr_override_ = false;
  RateLimitedLog log_{"pyneal warnings"};  // per-message warnings (NACKs by code, replies not sent), rate-limited
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> connections_{0}, disconnects_{0}, handshakes_{0}, received_{0}, acked_{0}, duplicates_{0},
      rejected_{0}, stops_{0};
};

}  // namespace rtf::stream::pyneal
