// LatencyLog: per-volume ingest timestamps (received, recorded, dequeued by the upload stage, on the device),
// appended as JSON lines to SESSION_DIR/latency.jsonl and summarised (p50/p95/p99/max per stage) at the end.
// Every row is kept in memory for the summary; one that cannot be written to the file is counted as lost (RowFile),
// never blocks or stops the caller. Thread-safe. Field meanings: docs/ingest.md; failures: docs/live.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stream/output/row_file.hpp"

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

// [{"stage", "n", "p50_ms", "p95_ms", "p99_ms", "max_ms"}] (latency_summary.json's "stages", the benchmarks' lines).
nlohmann::json stages_json(const std::vector<LatencyStage>& stages);

class LatencyLog {
 public:
  // Appends to `path` (created if needed); an empty path keeps the records in memory only. Rows that cannot be
  // written are reported to `failures` (null: nowhere).
  explicit LatencyLog(const std::filesystem::path& path, OutputFailures* failures = &output_failures());
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

  // Rows written to / lost from the file (records() has them all).
  int64_t rows_written() const;
  int64_t rows_lost() const;
  const std::filesystem::path& path() const { return path_; }
  // Syncs and closes the file (a later record's row counts as lost); returns the error, "" when none.
  std::string close();

  // latency_summary.json: {"volumes", "latency_jsonl": {"path", "rows_written", "rows_lost"}, "stages": [{"stage",
  // "n", "p50_ms", "p95_ms", "p99_ms", "max_ms"}]}.
  nlohmann::json summary_json() const;
  // summary_json() written to `path` atomically (temporary file, then renamed); throws naming the file and the error.
  void write_summary(const std::filesystem::path& path) const;

 private:
  mutable std::mutex mutex_;
  std::filesystem::path path_;
  std::unique_ptr<RowFile> file_;
  std::vector<IngestLatency> records_;
};

}  // namespace rtf::stream
