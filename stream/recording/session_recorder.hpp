// SessionRecorder: durably records accepted volumes into a session directory (append-only payload file plus journal
// per run) before the server acknowledges them, drops duplicates by (run, index), and writes a run's 4D NIfTI at its
// end. Layout, durability and costs: docs/recording.md. One recorder per session directory (an exclusive lock).
// Descriptors are bounded: at most max_open_runs runs keep their two files open (least recently used and idle runs'
// files are closed, and reopened on demand without re-reading the journal).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/image/image.hpp"
#include "core/util/rate_limited_log.hpp"
#include "stream/recording/recovery.hpp"

namespace rtf::stream {

// One volume as accepted from the wire.
struct RecordedVolume {
  std::string run;                     // run id: 1-64 characters of [A-Za-z0-9._-], not starting with '.'
  int64_t index = 0;                   // volume index within the run, >= 0
  ImageHeader grid;                    // dims, voxel_mm, affine, xform_code, tr_s, source_type (num_volumes ignored)
  std::span<const std::byte> payload;  // raw voxels, little-endian, x fastest, in grid.source_type
  double received_s = 0.0;             // receive time (seconds, the caller's clock, e.g. Unix time)
  std::optional<uint32_t> crc32;       // CRC-32 of payload if the caller already computed it (saves a pass)
};

enum class FsyncPolicy {
  kEveryVolume,  // fsync volumes.bin, then journal.jsonl, before record() returns: survives power loss
  kNone,         // leave it to the OS: survives a process crash, not a power loss or kernel panic
};

struct RecorderOptions {
  FsyncPolicy fsync = FsyncPolicy::kEveryVolume;
  std::string session_id;  // written to session.json when it is created; empty: null until bind_session()
  // Runs whose files (volumes.bin and journal.jsonl: two descriptors) are open at once, >= 1; lowered at start to fit
  // RLIMIT_NOFILE. Opening another closes the least recently used run's files; a closed run keeps its state (indices,
  // grid, sizes) and reopens on demand.
  size_t max_open_runs = 32;
  // A run's files are closed after this long without a volume (checked on each call and by close_idle_runs()).
  // Zero: only max_open_runs closes them.
  std::chrono::steady_clock::duration run_idle_close = std::chrono::seconds(60);
  SteadyNow clock = {};  // the idle rule's and the log summaries' clock; empty: std::chrono::steady_clock::now
};

enum class RecordStatus { kRecorded, kDuplicate, kRejected };

// Why a volume was rejected.
enum class RejectKind {
  kNone,          // not rejected
  kInvalid,       // bad run id, index, grid or payload length: the only kinds that are the sender's fault
  kInconsistent,  // grid, datatype or TR unlike the run's first volume
  kRunEnded,      // a new index for a run that has ended
  kWriteFailed,   // the disk refused (the errno text is in reason); nothing was kept
  kResource,      // out of file descriptors or memory opening the run's files, also after closing others' (retryable)
};

struct RecordResult {
  RecordStatus status = RecordStatus::kRejected;
  std::string reason;  // why it was rejected (or what it duplicated)
  RejectKind kind = RejectKind::kNone;
};

class RecordingError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

class SessionRecorder {
 public:
  // Opens (creating if needed) the session directory and its session.json, and locks it.
  // Throws RecordingError if the directory cannot be created or another recorder holds it.
  SessionRecorder(std::filesystem::path dir, RecorderOptions options = {});
  ~SessionRecorder();
  SessionRecorder(const SessionRecorder&) = delete;
  SessionRecorder& operator=(const SessionRecorder&) = delete;

  // Appends the payload to runs/<run>/volumes.bin, then its line to journal.jsonl, made durable per the fsync policy
  // before returning kRecorded. A (run, index) already journaled (also before a restart) gives kDuplicate and writes
  // nothing. Invalid input, a grid/datatype/TR unlike the run's first volume, a finished run, or a failed write (the
  // errno text in `reason`; the files are cut back to where they were) gives kRejected. Never throws for bad input.
  RecordResult record(const RecordedVolume& volume);

  // record() in two halves, so that a caller can hand the volume on while it is being made durable:
  // begin_record() checks the volume and writes its payload to volumes.bin (not yet synced), returning kRecorded
  // (meaning: written, commit pending), kDuplicate or kRejected as record() would; the payload is no longer needed
  // after it returns. commit_record() then syncs volumes.bin, appends and syncs the journal line, and returns
  // kRecorded, or kRejected with the files cut back. Exactly one commit_record() must follow each begin_record()
  // that returned kRecorded, before any other call that records.
  RecordResult begin_record(const RecordedVolume& volume);
  RecordResult commit_record();

  // Ends a run: appends the end-of-run journal line (once) and writes runs/<run>/bold.nii.gz from the journaled
  // volumes in index order. Missing indices are reported, not invented. Calling it again rewrites the NIfTI.
  RunRecovery finish_run(const std::string& run);

  // The first half of finish_run: appends (and fdatasyncs) the end-of-run journal line, once. After it the run takes
  // no new volumes. Returns "" on success, else the reason. build_run_nifti(run_dir(run), ...) is the second half.
  std::string end_run(const std::string& run);
  std::filesystem::path run_dir(const std::string& run) const { return dir_ / "runs" / run; }

  const std::filesystem::path& dir() const { return dir_; }

  // The session id in session.json; empty while none is bound.
  const std::string& session_id() const { return session_id_; }
  // Ties the directory to session `id`: the first call on a directory without an id writes it into session.json;
  // later calls succeed only for the same id (also after a restart). On false, `reason` says why.
  bool bind_session(const std::string& id, std::string& reason);

  // State of a run as journaled (opening it, and creating its directory, if needed). nullopt for an invalid id.
  struct RunState {
    bool ended = false;
    int64_t recorded = 0;          // distinct indices journaled
    std::vector<int64_t> missing;  // indices in [0, num_volumes) not journaled
  };
  // nullopt when the id is invalid or the run's files cannot be opened (`error`, when given, says why).
  std::optional<RunState> run_state(const std::string& run, int64_t num_volumes, std::string* error = nullptr);

  // Closes the files of runs without a volume for longer than run_idle_close (a volume between begin_record() and
  // commit_record() keeps its run's open), and logs due summaries of rate-limited lines. Cheap: call it when idle.
  void close_idle_runs();
  size_t open_runs() const { return open_lru_.size(); }  // runs whose files are open now (two descriptors each)
  // The bound in force: max_open_runs, lowered at start to fit RLIMIT_NOFILE (with a reserve for sockets and outputs).
  size_t max_open_runs() const { return open_limit_; }
  struct Counters {
    int64_t closed = 0;              // times a run's files were closed (idle, least recently used, ended, retry)
    int64_t reopened = 0;            // times a known run's files were opened again
    int64_t rebuilt = 0;             // reopenings that found the files changed and re-read the journal
    int64_t descriptor_retries = 0;  // opens that ran out of descriptors and were retried after closing others
  };
  const Counters& counters() const { return counters_; }

 private:
  struct Run;
  Run* find_run(const std::string& name, std::string& error, RejectKind& kind);  // loads it the first time
  bool ensure_open(Run& run, std::string& error, RejectKind& kind);              // its files open (reopened, checked)
  bool open_files(Run& run, std::string& error, RejectKind& kind);  // opens them, retrying once after freeing others'
  bool load_journal(Run& run, std::string& error);                  // the run's state from its journal (files open)
  void close_files(Run& run);
  void touch(Run& run);
  size_t free_descriptors(const Run* keep);  // closes the least recently used half of the open runs' files
  std::string out_of_descriptors(const std::string& what, int error_number) const;
  std::chrono::steady_clock::time_point now() const;
  struct Pending;  // what begin_record() wrote and commit_record() finishes
  std::unique_ptr<Pending> pending_;
  RecordResult fail_pending(const std::string& what);

  std::filesystem::path dir_;
  RecorderOptions options_;
  std::string session_id_;
  std::string created_;
  std::string write_session_json() const;  // "" on success, else the reason
  int lock_fd_ = -1;
  std::map<std::string, std::unique_ptr<Run>> runs_;
  std::list<Run*> open_lru_;  // runs whose files are open, least recently used first
  size_t open_limit_ = 1;     // max_open_runs as it fits the descriptor limit
  Counters counters_;
  RateLimitedLog log_;  // per-volume failures
};

// Whether `run` is usable as a run id (and directory name); fills `reason` if not.
bool valid_run_id(const std::string& run, std::string& reason);

}  // namespace rtf::stream
