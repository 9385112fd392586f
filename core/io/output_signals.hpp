// What SIGINT, SIGTERM and SIGHUP do to the outputs of a command (used by OutputSet, core/io/output_set.hpp): the
// handler, installed once for each of them that is not ignored, empties and removes every registered temporary
// folder and then hands the signal to the action that was there before (the default one, which ends the process by
// that signal, so the exit status says it; or a library's handler, e.g. LLVM's in PoCL, which cleans up and does the
// same); while a CommitGuard lives (the renames of a commit) the signal is held and acted on when the last guard ends,
// so that a set of outputs is never left half renamed. The handler does only async-signal-safe work (getdents64,
// unlinkat, rmdir, raise).
#pragma once

#include <filesystem>

namespace rtf::io::output_signals {

// Installs the handler (once per process) for each of SIGINT, SIGTERM, SIGHUP that is not ignored.
void install();

// A temporary folder to empty and remove when a signal ends the process; returns its slot (-1 when the table of 256
// is full: that folder is then only removed by its owner).
int register_folder(const std::filesystem::path& dir);
void unregister_folder(int slot) noexcept;

// Holds the three signals (on every thread) while it lives; the last guard to end acts on one that arrived.
class CommitGuard {
 public:
  CommitGuard();
  ~CommitGuard();
  CommitGuard(const CommitGuard&) = delete;
  CommitGuard& operator=(const CommitGuard&) = delete;
};

}  // namespace rtf::io::output_signals
