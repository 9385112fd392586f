// LatencyLog: per-volume ingest timestamps (received, recorded, dequeued by the upload stage, on the device),
// appended as JSON lines to SESSION_DIR/latency.jsonl and summarised (p50/p95/p99/max per stage) at the end.
// Thread-safe. Field meanings: docs/ingest.md.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace rtf::stream {

struct IngestLatency {
  std::string run;
  int64_t index = 0;
  int64_t received_ns = 0;   // steady clock: last frame received
  int64_t written_ns = 0;    // written to the session files and handed to analysis (durability pending)
  int64_t recorded_ns = 0;   // durably recorded, ACK sent right after (0: unknown or failed); runs beside analysis
  int64_t dequeued_ns = 0;   // taken from the queue by the upload stage
  int64_t uploaded_ns = 0;   // float volume complete in the device ring buffer (0: no device stage)
  int64_t motion_ns = 0;     // registered, resliced into the ring, FD/DVARS known (0: no motion stage)
  int64_t smoothed_ns = 0;   // the smoothed copy in the analysis ring (0: no smoothing)
  int64_t stats_ns = 0;      // GLM, CCA, connectivity done (0: not analysed)
  int64_t feedback_ns = 0;   // the feedback value computed
  int64_t sent_ns = 0;       // feedback line handed to the TCP/UDP outputs: the end of the volume's way
  int64_t published_ns = 0;  // maps read back and the result handed to the PUB socket (after the feedback line)
  bool skipped = false;      // uploaded but not analysed: a newer volume was waiting (falling behind)
};

// Quantiles of one stage's latency over the run (ms).
struct LatencyStage {
  std::string name;
  size_t count = 0;
  double p50 = 0.0, p95 = 0.0, p99 = 0.0, max = 0.0;
};

class LatencyLog {
 public:
  // Appends to `path` (created if needed); an empty path keeps the records in memory only.
  explicit LatencyLog(const std::filesystem::path& path);
  ~LatencyLog();
  LatencyLog(const LatencyLog&) = delete;
  LatencyLog& operator=(const LatencyLog&) = delete;

  void add(const IngestLatency& record);
  std::vector<IngestLatency> records() const;
  // Per stage that happened (each measured from the previous stage that happened), and end to end over the volumes
  // that were analysed (received -> the last stage).
  std::vector<LatencyStage> stages() const;
  // stages() as lines "stage  n= p50= p95= p99= max= ms".
  std::string summary() const;

 private:
  mutable std::mutex mutex_;
  std::FILE* file_ = nullptr;
  std::vector<IngestLatency> records_;
};

}  // namespace rtf::stream
