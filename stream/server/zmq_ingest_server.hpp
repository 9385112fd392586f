// ZmqIngestServer: the protocol-1 transport. Binds a ZeroMQ ROUTER socket, receives each sender's multipart
// messages, passes their frames to an IngestCore and sends the reply back to that sender. One thread; the
// receive loop polls so stop() takes effect within one poll interval, and gives the core its housekeeping (idle runs'
// files closed, log summaries) on each pass. docs/ingest.md, docs/protocol.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <zmq.hpp>

#include "core/util/rate_limited_log.hpp"
#include "stream/server/ingest_core.hpp"

namespace rtf::stream {

struct ZmqServerOptions {
  std::string address = "tcp://127.0.0.1:5555";  // ZeroMQ endpoint to bind; "tcp://127.0.0.1:*" picks a free port
  int64_t max_message_bytes = 0;                 // ZMQ_MAXMSGSIZE per frame; 0: from the protocol limits
  int poll_ms = 50;                              // how often the loop checks for stop()
  int send_high_water_mark = 10000;              // replies queued per peer before ZeroMQ drops them
};

class ZmqIngestServer {
 public:
  // Binds at once. Throws std::runtime_error naming the address when it cannot (in use, malformed, ...).
  ZmqIngestServer(zmq::context_t& context, IngestCore& core, ZmqServerOptions options = {});

  // Receives and answers messages until stop() is called. Never throws for anything a sender does.
  void run();
  void stop() { stop_.store(true); }

  // The endpoint actually bound (with the port chosen for "*").
  const std::string& endpoint() const { return endpoint_; }
  int64_t max_message_bytes() const { return max_message_bytes_; }

 private:
  void handle_one();

  IngestCore& core_;
  ZmqServerOptions options_;
  zmq::socket_t socket_;
  std::string endpoint_;
  int64_t max_message_bytes_ = 0;
  std::atomic<bool> stop_{false};
  RateLimitedLog log_{"ingest socket warnings"};  // replies not sent, socket errors: per key and interval
};

}  // namespace rtf::stream
