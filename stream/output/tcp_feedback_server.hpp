// TcpFeedbackServer: sends one line of text (a JSON object and '\n') per TR to every connected client, for stimulus
// software (Boost.Asio, its own I/O thread). publish() never blocks the pipeline: each client has a bounded queue of
// lines; when a client reads too slowly and its queue is full, its OLDEST waiting line is dropped (a stimulus script
// wants the newest value) and counted. A client that disconnects or errors is closed; others are unaffected. Binds to
// 127.0.0.1 unless told otherwise. docs/protocol.md §8-9.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace rtf::stream {

struct TcpFeedbackOptions {
  std::string address = "127.0.0.1";  // interface to bind
  uint16_t port = 5557;               // 0: any free port (see port())
  size_t queue_lines = 64;            // per client, before the oldest line is dropped
};

struct TcpFeedbackCounters {
  int64_t connections = 0;  // accepted so far
  int64_t clients = 0;      // connected now
  int64_t lines_published = 0;
  int64_t lines_dropped = 0;  // over all clients: queue full
  int64_t disconnects = 0;
};

class TcpFeedbackServer {
 public:
  // Binds and starts the I/O thread. Throws std::runtime_error naming the address when it cannot bind.
  explicit TcpFeedbackServer(TcpFeedbackOptions options);
  ~TcpFeedbackServer();  // stop()
  TcpFeedbackServer(const TcpFeedbackServer&) = delete;
  TcpFeedbackServer& operator=(const TcpFeedbackServer&) = delete;

  // Queues `line` (a '\n' is appended if missing) for every connected client. Thread-safe; returns immediately.
  void publish(std::string line);

  // Closes every client and the listener, and joins the I/O thread. Idempotent.
  void stop();

  uint16_t port() const { return port_; }
  TcpFeedbackCounters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
};

}  // namespace rtf::stream
