// ResultPublisher: per-TR results on a ZeroMQ PUB socket for viewers and other consumers. Each message is multipart:
// the topic "rtfmri.tr", a JSON header (which names and describes the binary frames that follow), then the binary
// frames (maps, matrices). PUB never blocks the pipeline: a subscriber that falls more than `high_water_mark`
// messages behind loses messages (ZeroMQ drops them), which the header's sequence number lets it notice.
// Layouts: docs/protocol.md ("Results stream").
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>
#include <zmq.hpp>

namespace rtf::stream {

inline constexpr const char* kResultTopic = "rtfmri.tr";

struct ResultFrame {
  std::string name;            // e.g. "t_map"
  std::string dtype;           // "float32"
  std::vector<int64_t> shape;  // e.g. {nx, ny, nz}: x fastest in memory
  std::span<const std::byte> bytes;
};

struct ResultPublisherOptions {
  std::string address = "tcp://127.0.0.1:5556";
  int high_water_mark = 16;  // messages queued per subscriber before ZeroMQ drops
};

class ResultPublisher {
 public:
  // Binds. Throws zmq::error_t (with the address in the log) when it cannot.
  ResultPublisher(zmq::context_t& context, ResultPublisherOptions options);

  // Sends the header (with "stream", "seq" and a "frames" list describing `frames` added) and the frames. Never
  // blocks.
  void publish(nlohmann::json header, const std::vector<ResultFrame>& frames);

  std::string endpoint() const;  // the bound endpoint (the port resolved if "*" was given)
  int64_t published() const { return seq_; }
  int64_t dropped() const { return dropped_; }

 private:
  zmq::socket_t socket_;
  int64_t seq_ = 0;
  int64_t dropped_ = 0;
  std::string stream_id_;  // random per publisher: a subscriber sees a restarted server by its change
};

}  // namespace rtf::stream
