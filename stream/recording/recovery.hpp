// Rebuilding a run's 4D NIfTI from its journal and payload file: used at end of run by SessionRecorder and, after a
// crash, by recover_session (`rtfmri recover`). Journal and payload files are only read, never changed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "stream/recording/journal.hpp"

namespace rtf::stream {

struct CorruptEntry {
  int64_t index = 0;
  std::string reason;  // e.g. "crc32 mismatch", "payload range beyond end of volumes.bin"
};

// Outcome of building one run's NIfTI.
struct RunRecovery {
  std::string run;
  int64_t journaled = 0;               // distinct volume entries in the journal
  int64_t recovered = 0;               // volumes written to the NIfTI
  std::vector<int64_t> indices;        // their indices, ascending (the NIfTI's volume order)
  std::vector<int64_t> missing;        // indices in [0, max index] with no valid volume
  std::vector<CorruptEntry> corrupt;   // journaled entries whose payload failed verification
  std::vector<std::string> bad_lines;  // complete journal lines that did not decode
  bool torn_tail = false;              // the journal ended in a partial line (ignored)
  bool ended = false;                  // the journal holds an end-of-run line
  std::filesystem::path nifti;         // runs/<run>/bold.nii.gz; empty if nothing was written
  std::string error;                   // set when the run could not be processed at all

  // Every journaled volume made it into the NIfTI.
  bool complete() const { return error.empty() && corrupt.empty() && bad_lines.empty() && recovered == journaled; }
};

struct RecoveryReport {
  std::vector<RunRecovery> runs;  // sorted by run name
  std::string error;              // set when the session directory itself is unusable
  bool complete() const;
};

// Verifies every journal entry of runs/<run>/ (payload range inside volumes.bin, length matches the grid, crc32,
// grid and datatype consistent with the run's first valid entry) and writes runs/<run>/bold.nii.gz from the valid
// ones in index order (the first valid entry wins for a repeated index). `entries` are the run's journal entries.
RunRecovery build_run_nifti(const std::filesystem::path& run_dir, const JournalContents& journal);

// Recovers every run under SESSION_DIR/runs/.
RecoveryReport recover_session(const std::filesystem::path& session_dir);

}  // namespace rtf::stream
