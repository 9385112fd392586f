// LiveOutputs: where each analysed TR goes. The feedback line (one JSON object: volume, feedback value and status,
// motion, ROI means, latency so far) to the TCP clients and UDP destinations, and the full result (the same header plus
// the maps and the connectivity matrix as binary frames) on the ZeroMQ PUB socket. Every output is optional and none
// blocks. Formats: docs/protocol.md ("Results stream", "Feedback lines").
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
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

// The live stage's and ingest's counts at the time of a PUB message (docs/protocol.md §8, `counters`).
struct LiveCounts {
  int64_t received = 0;      // volumes handed to the live stage since the server started
  int64_t analysed = 0;      // of those, analysed (this one included)
  int64_t skipped = 0;       // uploaded but not analysed (a newer volume was waiting)
  int64_t dropped = 0;       // recorded but never handed on: the ingest queue was full
  int64_t duplicates = 0;    // resent volumes that ingest ACKed again
  int64_t missing = 0;       // this run: indices below its newest one that the live stage has not seen
  int64_t not_analysed = 0;  // volumes of runs recorded only (more runs than max_live_runs, or their analysis ended)
};

// The feedback line for a volume of a run that is recorded but not analysed live: status "recorded-only", the reason,
// no value (docs/protocol.md §9).
nlohmann::json not_analysed_json(const std::string& run, int64_t index, const std::string& reason,
                                 const IngestLatency& latency);

// The PUB message's JSON header without `seq` and `frames` (ResultPublisher adds those): feedback_json plus the grid,
// the design row, the atlas regions, the device and the counts.
nlohmann::json result_header(const TrResult& result, const IngestLatency& latency, int64_t skipped_since_last,
                             std::string_view device, const LiveCounts& counts);

class LiveOutputs {
 public:
  // Binds what `config` asks for ([outputs]); throws naming the address when one cannot be bound.
  LiveOutputs(zmq::context_t& context, const PipelineConfig& config);

  // The feedback line to the TCP clients and UDP destinations; stamps latency.sent_ns. First: it is what a stimulus
  // script waits for.
  void send_feedback(const TrResult& result, IngestLatency& latency, int64_t skipped_since_last);
  // not_analysed_json's line to the same clients; stamps latency.sent_ns.
  void send_not_analysed(const std::string& run, int64_t index, const std::string& reason, IngestLatency& latency);

  // The result with its maps (RunPipeline::read_maps) on the PUB socket (header: result_header); stamps
  // latency.published_ns.
  void publish(const TrResult& result, IngestLatency& latency, int64_t skipped_since_last, std::string_view device,
               const LiveCounts& counts);

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
