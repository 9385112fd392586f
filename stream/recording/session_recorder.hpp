// SessionRecorder: durably records accepted volumes into a session directory (append-only payload file plus journal
// per run) before the server acknowledges them, drops duplicates by (run, index), and writes a run's 4D NIfTI at its
// end. Layout, durability and costs: docs/recording.md. One recorder per session directory (an exclusive lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/image/image.hpp"
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
};

enum class RecordStatus { kRecorded, kDuplicate, kRejected };

// Why a volume was rejected.
enum class RejectKind {
  kNone,          // not rejected
  kInvalid,       // bad run id, index, grid or payload length
  kInconsistent,  // grid, datatype or TR unlike the run's first volume
  kRunEnded,      // a new index for a run that has ended
  kWriteFailed,   // the disk refused (the errno text is in reason); nothing was kept
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
  std::optional<RunState> run_state(const std::string& run, int64_t num_volumes);

 private:
  struct Run;
  Run* open_run(const std::string& run, std::string& error);
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
};

// Whether `run` is usable as a run id (and directory name); fills `reason` if not.
bool valid_run_id(const std::string& run, std::string& reason);

}  // namespace rtf::stream
