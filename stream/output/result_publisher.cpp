// ResultPublisher: PUB socket set-up, header with frame descriptions, non-blocking multipart send.
#include "stream/output/result_publisher.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <random>

namespace rtf::stream {

ResultPublisher::ResultPublisher(zmq::context_t& context, ResultPublisherOptions options)
    : socket_(context, zmq::socket_type::pub) {
  std::random_device random;
  stream_id_ = fmt::format("{:08x}{:08x}", random(), random());
  socket_.set(zmq::sockopt::sndhwm, options.high_water_mark);
  socket_.set(zmq::sockopt::linger, 0);
  try {
    socket_.bind(options.address);
  } catch (const zmq::error_t& e) {
    spdlog::error("results PUB: cannot bind {}: {}", options.address, e.what());
    throw;
  }
}

std::string ResultPublisher::endpoint() const {
  return socket_.get(zmq::sockopt::last_endpoint);
}

void ResultPublisher::publish(nlohmann::json header, const std::vector<ResultFrame>& frames) {
  header["stream"] = stream_id_;
  header["seq"] = seq_++;
  nlohmann::json described = nlohmann::json::array();
  for (const ResultFrame& f : frames) {
    described.push_back({{"name", f.name}, {"dtype", f.dtype}, {"shape", f.shape}, {"bytes", f.bytes.size()}});
  }
  header["frames"] = described;
  const std::string text = header.dump();
  const std::string topic = kResultTopic;
  // PUB drops whole messages at the high-water mark rather than blocking; ZMQ_DONTWAIT makes that explicit.
  bool ok = socket_.send(zmq::buffer(topic), zmq::send_flags::sndmore | zmq::send_flags::dontwait).has_value();
  ok = ok && socket_
                 .send(zmq::buffer(text),
                       (frames.empty() ? zmq::send_flags::none : zmq::send_flags::sndmore) | zmq::send_flags::dontwait)
                 .has_value();
  for (size_t i = 0; ok && i < frames.size(); ++i) {
    const auto flags =
        (i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none) | zmq::send_flags::dontwait;
    ok = socket_.send(zmq::const_buffer(frames[i].bytes.data(), frames[i].bytes.size()), flags).has_value();
  }
  if (!ok) ++dropped_;
}

}  // namespace rtf::stream
