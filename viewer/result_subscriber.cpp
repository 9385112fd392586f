// ResultSubscriber: receive loop (100 ms polls, so that stopping is prompt), connection events, decoding, status.
#include "viewer/result_subscriber.hpp"

#include <spdlog/spdlog.h>

#include <variant>
#include <vector>
#include <zmq.hpp>

#include "stream/output/zmq_connection_monitor.hpp"
#include "viewer/result_message.hpp"

namespace rtf::viewer {

ResultSubscriber::ResultSubscriber(std::string address, SharedViewerData& shared)
    : address_(std::move(address)), shared_(shared) {
  thread_ = std::thread([this] { run(); });
}

ResultSubscriber::~ResultSubscriber() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

SubscriberStatus ResultSubscriber::status() const {
  std::lock_guard lock(status_mutex_);
  SubscriberStatus s = status_;
  if (status_.messages > 0) {
    s.seconds_since_last = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_).count();
  }
  return s;
}

void ResultSubscriber::run() {
  zmq::context_t context(1);
  zmq::socket_t socket(context, zmq::socket_type::sub);
  stream::ZmqConnectionMonitor connection(context, socket);
  socket.set(zmq::sockopt::subscribe, "rtfmri.tr");
  socket.set(zmq::sockopt::rcvtimeo, 100);
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::rcvhwm, 64);
  socket.set(zmq::sockopt::reconnect_ivl, 200);
  socket.set(zmq::sockopt::reconnect_ivl_max, 2000);
  try {
    socket.connect(address_);
  } catch (const zmq::error_t& e) {
    std::lock_guard lock(status_mutex_);
    status_.last_error = "cannot connect to " + address_ + ": " + e.what();
    spdlog::error("{}", status_.last_error);
    return;
  }
  std::vector<zmq::message_t> parts;
  bool connected = false;
  while (!stop_) {
    zmq::pollitem_t items[] = {{socket.handle(), 0, ZMQ_POLLIN, 0}, {connection.events().handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, 2, std::chrono::milliseconds(100));
    if (const bool now = connection.poll() > 0; now != connected) {
      connected = now;
      if (connected) {
        spdlog::info("results: connected to {}", address_);
      } else {
        spdlog::warn("results: connection to {} lost; reconnecting", address_);
      }
      std::lock_guard lock(status_mutex_);
      status_.connected = connected;
    }
    if ((items[0].revents & ZMQ_POLLIN) == 0) continue;
    parts.clear();
    zmq::message_t part;
    if (!socket.recv(part)) continue;  // timeout
    parts.push_back(std::move(part));
    while (parts.back().more()) {
      zmq::message_t next;
      if (!socket.recv(next)) break;
      parts.push_back(std::move(next));
    }
    if (parts.size() < 2) continue;
    std::vector<std::span<const std::byte>> frames;
    for (size_t i = 2; i < parts.size(); ++i) {
      frames.emplace_back(static_cast<const std::byte*>(parts[i].data()), parts[i].size());
    }
    auto decoded = decode_result_message(parts[1].to_string_view(), frames);
    std::lock_guard lock(status_mutex_);
    if (auto* error = std::get_if<DecodeError>(&decoded)) {
      ++status_.bad_messages;
      status_.last_error = error->reason;
      spdlog::warn("results message left out: {}", error->reason);
      continue;
    }
    shared_.apply(std::move(std::get<TrUpdate>(decoded)));
    ++status_.messages;
    last_ = std::chrono::steady_clock::now();
  }
}

}  // namespace rtf::viewer
