// ResultSubscriber: the network thread. A ZeroMQ SUB socket on the server's results stream (docs/protocol.md §8);
// each message is decoded and applied to SharedViewerData. ZeroMQ reconnects by itself when the server restarts; a
// restarted server (sequence back to 0) or a new run clears the history. Whether the server is connected comes from
// the socket's handshake events (logged once per change: "results: connected to ..."), so "connected" means the
// subscription reached the server, not merely that the address was valid. No OpenGL work happens here.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "viewer/shared_viewer_data.hpp"

namespace rtf::viewer {

struct SubscriberStatus {
  int64_t messages = 0;      // decoded and applied
  int64_t bad_messages = 0;  // could not be decoded (reason in last_error)
  std::string last_error;
  bool connected = false;            // a server completed the handshake and has not disconnected since
  double seconds_since_last = -1.0;  // -1: nothing received yet
};

class ResultSubscriber {
 public:
  // Connects to `address` (e.g. tcp://127.0.0.1:5556) and starts the thread. Throws if the address is invalid.
  ResultSubscriber(std::string address, SharedViewerData& shared);
  ~ResultSubscriber();
  ResultSubscriber(const ResultSubscriber&) = delete;
  ResultSubscriber& operator=(const ResultSubscriber&) = delete;

  SubscriberStatus status() const;
  const std::string& address() const { return address_; }

 private:
  void run();

  std::string address_;
  SharedViewerData& shared_;
  std::atomic<bool> stop_{false};
  mutable std::mutex status_mutex_;
  SubscriberStatus status_;
  std::chrono::steady_clock::time_point last_{};
  std::thread thread_;
};

}  // namespace rtf::viewer
