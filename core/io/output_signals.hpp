// What SIGINT, SIGTERM and SIGHUP do to the outputs of a command (used by OutputSet, core/io/output_set.hpp): the
// handler, installed once where the signal still has its default action, empties and removes every registered
// temporary folder and then ends the process as the default action would (the same signal, so the exit status says
// it); while a CommitGuard lives (the renames of a commit) the signal is held and acted on when the last guard ends, so
// that a set of outputs is never left half renamed. The handler does only async-signal-safe work (getdents64,
// unlinkat, rmdir, raise).
#pragma once

#include <filesystem>

namespace rtf::io::output_signals {

// Installs the handler (once per process) for each of SIGINT, SIGTERM, SIGHUP whose action is the default one.
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
