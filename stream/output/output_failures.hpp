// OutputFailures: what the live server (and `rtfmri replay`) could not write. Every checked writer of a session's
// files reports here: rows of a row file that were lost (latency.jsonl, motion.tsv, feedback.tsv) and whole files that
// were not written (final maps, bold.nii.gz, JSON reports). The shutdown summary lists them and `rtfmri run` exits
// non-zero when any lies in its session directory. Thread-safe. docs/live.md ("When a write fails").
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace rtf::stream {

struct LostOutput {
  std::filesystem::path path;  // absolute, normalised
  std::string error;           // the first failure, naming the path and the errno text
  int64_t rows_lost = 0;       // a row file: rows not written
  bool file_lost = false;      // the file itself is missing or incomplete (not written, or its close/sync failed)
};

class OutputFailures {
 public:
  void row_lost(const std::filesystem::path& path, const std::string& error, int64_t rows = 1);
  void file_lost(const std::filesystem::path& path, const std::string& error);

  // The outputs lost under `dir` (every one when `dir` is empty), in the order first reported.
  std::vector<LostOutput> lost(const std::filesystem::path& dir = {}) const;
  // One line per lost output: "PATH: N rows not written (ERROR)" or "PATH: not written (ERROR)".
  std::vector<std::string> lines(const std::filesystem::path& dir = {}) const;
  void clear();

 private:
  LostOutput& entry(const std::filesystem::path& path, const std::string& error);

  mutable std::mutex mutex_;
  std::vector<LostOutput> lost_;
};

// The process's record: every writer of the live server and of `rtfmri replay` reports here (like the log, it is one
// per process; a writer may be given another for a test).
OutputFailures& output_failures();

// Runs `write`, which writes `path` whole (throws on failure). A failure is logged as an error naming `what` and
// recorded in `failures` as a lost file; returns false then. Never throws.
bool write_output(const std::filesystem::path& path, const std::string& what, const std::function<void()>& write,
                  OutputFailures& failures = output_failures());

// "<what> <path>: <errno text>" for the current errno.
std::string errno_message(const std::string& what, const std::filesystem::path& path);

}  // namespace rtf::stream
