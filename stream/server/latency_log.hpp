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
  int64_t received_ns = 0;  // steady clock: last frame received
  int64_t recorded_ns = 0;  // durably recorded (ACK sent right after)
  int64_t dequeued_ns = 0;  // taken from the queue by the upload stage
  int64_t uploaded_ns = 0;  // float volume complete in the device ring buffer (0: no device stage)
  int64_t motion_ns = 0;    // registered, resliced into the ring, FD/DVARS known (0: no motion stage)
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
  // Lines "stage: n, p50, p95, p99, max (ms)" for received->recorded, recorded->uploaded, uploaded->motion and
  // received->(last stage).
  std::string summary() const;

 private:
  mutable std::mutex mutex_;
  std::FILE* file_ = nullptr;
  std::vector<IngestLatency> records_;
};

}  // namespace rtf::stream
