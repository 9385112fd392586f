// ZmqConnectionMonitor: whether a ZeroMQ socket has a live peer, from zmq_socket_monitor's events. A peer counts once
// the ZMTP handshake succeeded (for a SUB socket: its subscription went to the publisher right after) and stops
// counting when it disconnects. Lets a subscriber say "connected" (the viewer) and lets tests start sending only once
// the subscriber is there, instead of sleeping and hoping. Header-only (zmq.hpp only), so that rtf_viewer_model can use
// it without linking the server library. Use the monitored socket and this object from one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <zmq.hpp>

namespace rtf::stream {

class ZmqConnectionMonitor {
 public:
  // Starts monitoring `socket` (before it connects or binds, so that no event is missed). `context` is the socket's.
  ZmqConnectionMonitor(zmq::context_t& context, zmq::socket_t& socket) : events_(context, zmq::socket_type::pair) {
    static std::atomic<int64_t> counter{0};
    const std::string address = "inproc://rtf-monitor-" + std::to_string(counter.fetch_add(1));
    if (zmq_socket_monitor(socket.handle(), address.c_str(), ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) !=
        0) {
      throw zmq::error_t();
    }
    events_.set(zmq::sockopt::linger, 0);
    events_.connect(address);
  }

  // Reads the events that arrived, waiting up to `wait` for the first; returns the peers connected now.
  int poll(std::chrono::milliseconds wait = std::chrono::milliseconds(0)) {
    zmq::pollitem_t item{events_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, wait) <= 0) return connected_;
    while (true) {
      zmq::message_t event, address;
      if (!events_.recv(event, zmq::recv_flags::dontwait)) break;
      if (event.more()) (void)events_.recv(address, zmq::recv_flags::dontwait);
      if (event.size() < sizeof(uint16_t)) continue;
      uint16_t id = 0;
      std::memcpy(&id, event.data(), sizeof(id));
      if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) ++connected_;
      if (id == ZMQ_EVENT_DISCONNECTED && connected_ > 0) --connected_;
    }
    return connected_;
  }

  // Waits until at least one peer is connected, up to `limit`; true if one is.
  bool wait_connected(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (poll(std::chrono::milliseconds(10)) == 0) {
      if (std::chrono::steady_clock::now() > deadline) return false;
    }
    return true;
  }

  int connected() const { return connected_; }
  // The PAIR socket that receives the events, for a zmq::poll beside other sockets.
  zmq::socket_t& events() { return events_; }

 private:
  zmq::socket_t events_;
  int connected_ = 0;
};

}  // namespace rtf::stream
