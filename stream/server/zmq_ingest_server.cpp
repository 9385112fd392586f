// ZmqIngestServer: ROUTER socket, frame extraction, replies routed back to the sending peer.
#include "stream/server/zmq_ingest_server.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <vector>
#include <zmq_addon.hpp>

namespace rtf::stream {

ZmqIngestServer::ZmqIngestServer(zmq::context_t& context, IngestCore& core, ZmqServerOptions options)
    : core_(core), options_(std::move(options)), socket_(context, zmq::socket_type::router) {
  // Default frame limit: the largest legal payload or header, plus slack. A larger frame makes ZeroMQ drop the
  // connection before any of it is buffered, so a bogus length cannot exhaust memory.
  const ProtocolLimits& limits = core_.limits();
  max_message_bytes_ =
      options_.max_message_bytes > 0
          ? options_.max_message_bytes
          : static_cast<int64_t>(std::max<uint64_t>(limits.max_payload_bytes, limits.max_header_bytes)) + 4096;
  try {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.set(zmq::sockopt::sndhwm, options_.send_high_water_mark);
    socket_.set(zmq::sockopt::maxmsgsize, max_message_bytes_);
    socket_.bind(options_.address);
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error(fmt::format("cannot listen on {}: {}", options_.address, e.what()));
  }
}

void ZmqIngestServer::run() {
  zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
  while (!stop_.load()) {
    core_.tick();
    log_.poll();
    try {
      if (zmq::poll(&item, 1, std::chrono::milliseconds(options_.poll_ms)) > 0 && (item.revents & ZMQ_POLLIN)) {
        // Drain what is waiting before polling again.
        for (int i = 0; i < 64 && !stop_.load(); ++i) {
          if (socket_.get(zmq::sockopt::events) & ZMQ_POLLIN) {
            handle_one();
          } else {
            break;
          }
        }
      }
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      log_.error("socket error", "ingest socket: {}", e.what());
    }
  }
}

void ZmqIngestServer::handle_one() {
  std::vector<zmq::message_t> frames;
  if (!zmq::recv_multipart(socket_, std::back_inserter(frames), zmq::recv_flags::dontwait)) return;
  const int64_t received_ns = steady_now_ns();
  if (frames.empty()) return;
  // frames[0]: the peer identity added by ROUTER. A REQ sender adds an empty delimiter frame: accept and echo it.
  size_t first = 1;
  const bool delimiter = frames.size() > 2 && frames[1].size() == 0;
  if (delimiter) first = 2;
  std::vector<std::span<const std::byte>> body;
  for (size_t i = first; i < frames.size(); ++i) {
    body.emplace_back(static_cast<const std::byte*>(frames[i].data()), frames[i].size());
  }
  const std::string reply = core_.handle_frames(body, received_ns);
  try {
    const bool sent = socket_.send(frames[0], zmq::send_flags::sndmore | zmq::send_flags::dontwait).has_value() &&
                      (!delimiter || socket_.send(zmq::message_t(), zmq::send_flags::sndmore).has_value()) &&
                      socket_.send(zmq::buffer(reply), zmq::send_flags::dontwait).has_value();
    if (!sent) log_.warn("reply not sent", "reply not sent (peer gone or its queue full): {}", reply);
  } catch (const zmq::error_t& e) {
    log_.warn("reply not sent", "reply not sent: {}", e.what());
  }
}

}  // namespace rtf::stream
