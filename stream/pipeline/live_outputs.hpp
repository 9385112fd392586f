// LiveOutputs: where each analysed TR goes. The feedback line (one JSON object: volume, feedback value and status,
// motion, ROI means, latency so far) to the TCP clients and UDP destinations, and the full result (the same header plus
// the maps and the connectivity matrix as binary frames) on the ZeroMQ PUB socket. Every output is optional and none
// blocks. Formats: docs/protocol.md ("Results stream", "Feedback lines").
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <zmq.hpp>

#include "stream/output/result_publisher.hpp"
#include "stream/output/tcp_feedback_server.hpp"
#include "stream/output/udp_feedback_sender.hpp"
#include "stream/pipeline/pipeline_config.hpp"
#include "stream/pipeline/run_pipeline.hpp"
#include "stream/server/latency_log.hpp"

namespace rtf::stream {

// The feedback line's JSON (also the PUB header's core). `latency` holds the timestamps so far.
nlohmann::json feedback_json(const TrResult& result, const IngestLatency& latency, int64_t skipped_since_last);

class LiveOutputs {
 public:
  // Binds what `config` asks for ([outputs]); throws naming the address when one cannot be bound.
  LiveOutputs(zmq::context_t& context, const PipelineConfig& config);

  // The feedback line to the TCP clients and UDP destinations; stamps latency.sent_ns. First: it is what a stimulus
  // script waits for.
  void send_feedback(const TrResult& result, IngestLatency& latency, int64_t skipped_since_last);

  // The result with its maps (RunPipeline::read_maps) on the PUB socket; stamps latency.published_ns.
  void publish(const TrResult& result, IngestLatency& latency, int64_t skipped_since_last);

  // Closes the TCP server (clients are disconnected).
  void stop();

  const ResultPublisher* publisher() const { return publisher_.get(); }
  const TcpFeedbackServer* tcp() const { return tcp_.get(); }
  const UdpFeedbackSender* udp() const { return udp_.get(); }

 private:
  std::unique_ptr<ResultPublisher> publisher_;
  std::unique_ptr<TcpFeedbackServer> tcp_;
  std::unique_ptr<UdpFeedbackSender> udp_;
};

}  // namespace rtf::stream
