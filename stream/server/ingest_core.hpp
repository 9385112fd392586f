// IngestCore: the transport-independent heart of the ingest server. It takes protocol-1 messages (or volumes
// from another transport through the VolumeHandler seam), validates them, records each accepted volume durably
// before answering ACK, drops duplicates by (run, index), closes runs on END_OF_RUN, and hands every newly
// recorded volume to later stages through a DropOldestQueue that never makes ingest wait.
// Behaviour and reply rules: docs/protocol.md; threading and queue policy: docs/ingest.md.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/rate_limited_log.hpp"
#include "core/util/serial_worker.hpp"
#include "stream/protocol/messages.hpp"
#include "stream/protocol/volume_header.hpp"
#include "stream/recording/session_recorder.hpp"
#include "stream/server/drop_oldest_queue.hpp"
#include "stream/server/latency_log.hpp"
#include "stream/server/volume_handler.hpp"

namespace rtf::stream {

// When a volume handed on before it was durable became durable: set once by the ingest thread, read by later stages
// (after their own time-critical work, so that they never wait for the disk before it).
class RecordedStamp {
 public:
  void set(int64_t recorded_ns);  // > 0: durably recorded at that time (steady clock, ns); -1: recording failed
  int64_t wait() const;           // blocks until set; returns what was set
  int64_t recorded_ns() const;    // wait(), with a failure as 0

 private:
  std::atomic<int64_t> ns_{0};
};

// A volume on its way to later stages, with its ingest timestamps (steady clock, ns). It is handed on as soon as its
// payload is written to volumes.bin, while the recorder makes it durable (fdatasync) and only then ACKs it: analysis
// does not wait for the disk. `recorded` says when it became durable, or that it failed (it was then NACKed; a
// resend of it arrives again, and later stages must ignore a (run, index) they have already taken).
struct AcceptedVolume {
  VolumeHeader header;
  std::vector<std::byte> payload;  // as received: little-endian, x fastest, header.datatype
  int64_t received_ns = 0;         // last frame arrived
  int64_t written_ns = 0;          // written to the session files and handed on (durability pending)
  std::shared_ptr<const RecordedStamp> recorded;
};

// The ingest part of a volume's latency record (waits until it is durable or failed).
IngestLatency ingest_latency(const AcceptedVolume& volume);

struct IngestOptions {
  ProtocolLimits limits;
  RecorderOptions recorder;    // fsync policy; session_id binds the directory up front (else the first volume does);
                               // max_open_runs, run_idle_close; its clock also times the log summaries
  LogRateLimit log_limit;      // NACK lines per code (and new-run lines) per interval; the rest are counted
  size_t queue_capacity = 64;  // volumes waiting for later stages before the oldest is dropped (for them only)
};

struct IngestStats {
  int64_t messages = 0;       // every message handled
  int64_t recorded = 0;       // volumes newly recorded (ACKed)
  int64_t duplicates = 0;     // volumes ACKed again as duplicates
  int64_t nacked = 0;         // messages NACKed
  int64_t runs_closed = 0;    // END_OF_RUN ACKed (first time)
  int64_t queue_dropped = 0;  // recorded volumes later stages never saw because the queue was full
  std::map<std::string, int64_t> nacks_by_code;
};

class IngestCore {
 public:
  // Opens (and locks) the session directory. Throws RecordingError when it cannot.
  IngestCore(const std::filesystem::path& session_dir, IngestOptions options = {});
  ~IngestCore();
  IngestCore(const IngestCore&) = delete;
  IngestCore& operator=(const IngestCore&) = delete;

  // One protocol-1 message as it came off the wire (frames after the ROUTER's identity frame). Returns the reply
  // frame (ACK or NACK JSON). Never throws.
  std::string handle_frames(std::span<const std::span<const std::byte>> frames, int64_t received_ns);

  // A volume whose header is already parsed (from handle_frames or another transport): payload check, session
  // binding, within-run consistency, duplicate check, recording, hand-off. Never throws.
  Reply handle_volume(const VolumeHeader& header, std::vector<std::byte>&& payload, int64_t received_ns);
  Reply handle_end_of_run(const EndOfRun& message);

  // Binds the session directory to `id` up front (rtfmri run --session); false with `reason` if it holds another.
  bool bind_session(const std::string& id, std::string& reason);

  // Housekeeping for a transport's poll loop: closes idle runs' files and logs due summaries of suppressed lines.
  void tick();

  // This core as a VolumeHandler for other transports (pyneal).
  VolumeHandler as_handler();

  // Writes bold.nii.gz for every run that has volumes but no END_OF_RUN yet (a clean shutdown mid-run), without
  // ending them, and waits for the NIfTIs of closed runs still being written. Returns one line per run.
  std::vector<std::string> write_open_runs();

  // Waits until the NIfTIs of every closed run are written; returns one line per run finished since the last call.
  std::vector<std::string> wait_for_run_files();

  DropOldestQueue<AcceptedVolume>& queue() { return queue_; }
  // Whether `run` was closed by its END_OF_RUN (ACKed) since this process started. Every volume of the run was handed
  // to the queue before this turns true. Never waits for the disk (its own lock): the live thread asks it.
  bool run_ended(const std::string& run) const;
  const ProtocolLimits& limits() const { return options_.limits; }
  IngestStats stats() const;
  // Only `duplicates` and `queue_dropped` (the other fields 0), without the lock that the ingest thread holds across
  // fdatasync: for the live thread's per-TR results, which must not wait for the disk.
  IngestStats quick_stats() const;
  const std::filesystem::path& session_dir() const { return recorder_.dir(); }

 private:
  Reply nack(const VolumeHeader& header, ErrorCode code, std::string reason);
  Reply nack(ReplyTo of, const std::string& session, const std::string& run, std::optional<int64_t> index,
             ErrorCode code, std::string reason);

  IngestOptions options_;
  mutable std::mutex mutex_;  // one message at a time (the ROUTER and pyneal transports may share a core)
  SessionRecorder recorder_;
  std::map<std::string, VolumeHeader> first_of_run_;  // run id -> its first volume seen by this process
  std::map<std::string, int64_t> open_run_volumes_;   // runs with volumes recorded here and not yet ended
  std::vector<std::future<std::string>> run_files_;   // bold.nii.gz of closed runs, written off the ingest thread
  SerialWorker run_file_writer_;                      // one at a time, however many runs close at once
  DropOldestQueue<AcceptedVolume> queue_;
  IngestStats stats_;
  std::atomic<int64_t> duplicates_{0};  // stats_.duplicates, readable without mutex_
  RateLimitedLog nack_log_;             // one key per NACK code
  RateLimitedLog run_log_;              // lines per run (first volume, closed, its NIfTI written)
  mutable std::mutex ended_mutex_;      // guards ended_runs_ only (never held across a disk operation)
  std::set<std::string> ended_runs_;
};

}  // namespace rtf::stream
