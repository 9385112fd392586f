// SessionRecorder: durably records accepted volumes into a session directory (append-only payload file plus journal
// per run) before the server acknowledges them, drops duplicates by (run, index), and writes a run's 4D NIfTI at its
// end. Layout, durability and costs: docs/recording.md. One recorder per session directory (an exclusive lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>

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
};

enum class FsyncPolicy {
  kEveryVolume,  // fsync volumes.bin, then journal.jsonl, before record() returns: survives power loss
  kNone,         // leave it to the OS: survives a process crash, not a power loss or kernel panic
};

struct RecorderOptions {
  FsyncPolicy fsync = FsyncPolicy::kEveryVolume;
  std::string session_id;  // written to session.json when it is created; empty: derived from the creation time
};

enum class RecordStatus { kRecorded, kDuplicate, kRejected };

struct RecordResult {
  RecordStatus status = RecordStatus::kRejected;
  std::string reason;  // why it was rejected (or what it duplicated)
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

  // Ends a run: appends the end-of-run journal line (once) and writes runs/<run>/bold.nii.gz from the journaled
  // volumes in index order. Missing indices are reported, not invented. Calling it again rewrites the NIfTI.
  RunRecovery finish_run(const std::string& run);

  const std::filesystem::path& dir() const { return dir_; }

 private:
  struct Run;
  Run* open_run(const std::string& run, std::string& error);

  std::filesystem::path dir_;
  RecorderOptions options_;
  int lock_fd_ = -1;
  std::map<std::string, std::unique_ptr<Run>> runs_;
};

// Whether `run` is usable as a run id (and directory name); fills `reason` if not.
bool valid_run_id(const std::string& run, std::string& reason);

}  // namespace rtf::stream
