// FolderWatcher: says when a file written into a scanner's export folder is complete (behind `rtfmri scanner watch`).
// Linux inotify: a file is complete once its writer closed it (IN_CLOSE_WRITE) or it was renamed into the folder
// (IN_MOVED_TO). Polling, where inotify cannot see the writes (network and FUSE filesystems, where other machines
// write) or is unavailable: a file is complete once its size and mtime stayed the same across two scans at least
// `settle_s` apart; files found by a scan while inotify is in use (present at start, in a folder created a moment
// before its watch was added, after an event-queue overflow) are judged the same way unless their close is seen first.
// Hidden and temporary names (".x", "x.tmp", "x.part", "x.partial", "x~") are ignored until renamed. A caller that
// finds a reported file incomplete hands it back with retry_later().
//
// On NFS, stat() sees attribute-cached sizes and times (actimeo, 3 to 60 s by default): set `settle_s` above the
// mount's cache time, or mount the export folder with a short actimeo, or rely on retry_later().
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rtf::scanner {

enum class WatchMode { kAuto, kInotify, kPoll };

struct WatchOptions {
  WatchMode mode = WatchMode::kAuto;  // automatic: inotify, unless on a network/FUSE filesystem or unavailable
  double poll_interval_s = 0.1;       // time between scans (polling) or between re-checks of timed files (inotify)
  double settle_s = 0.5;              // a scanned file is complete when unchanged across scans this far apart
  bool recursive = false;             // watch subfolders too, including those created later (GE: one per series)
  bool include_existing = true;       // report files already present at start (once settled)
  double retry_backoff_s = 0.5;  // an unchanged retried file is reported again after this, doubling each time (to 8x)
  double give_up_s = 30;         // a retried file still incomplete this long after its first retry_later() is skipped
};

// A folder that cannot be watched or that disappeared; the message names the folder.
class WatchError : public std::runtime_error {
 public:
  WatchError(const std::filesystem::path& dir, const std::string& problem);
};

class FolderWatcher {
 public:
  // Throws WatchError when `dir` is not an existing folder, or when inotify was asked for and cannot watch it. Logs one
  // line saying which mode is in use and, for polling, why.
  explicit FolderWatcher(const std::filesystem::path& dir, WatchOptions options = {});
  ~FolderWatcher();
  FolderWatcher(const FolderWatcher&) = delete;
  FolderWatcher& operator=(const FolderWatcher&) = delete;

  // Files (absolute paths) that became complete since the last call, each reported once, in the order they completed;
  // waits up to `timeout_s` for at least one and returns empty on timeout or after stop(). A file rewritten after it
  // was reported is reported again. The watcher reads events and scans only inside this call (scans at most every
  // poll_interval_s, however often it is called). Throws WatchError once the folder has disappeared. One thread at a
  // time.
  std::vector<std::filesystem::path> next_ready(double timeout_s);

  // The caller found a reported `file` incomplete: it is reported again once its size/mtime changed (and settled, or
  // its writer closed it), or else after a back-off; `give_up_s` after the first retry_later() of this file it is
  // skipped with a warning and listed in given_up(). A file the watcher does not know (deleted) is ignored.
  void retry_later(const std::filesystem::path& file);

  // Makes a next_ready() waiting in another thread return promptly, and every later call return empty at once.
  void stop();

  WatchMode mode() const;                               // inotify or poll (inotify may fall back to poll later)
  std::string mode_reason() const;                      // why this mode, for logs and status lines
  std::vector<std::filesystem::path> given_up() const;  // files skipped after give_up_s, in order
  const std::filesystem::path& dir() const;             // the watched folder, absolute

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The name of the network or FUSE filesystem holding `path` (statfs f_type: NFS, CIFS, SMB2, FUSE, 9P, ...), where
// inotify misses other machines' writes; nullopt for a local filesystem or when statfs fails.
std::optional<std::string> network_filesystem_name(const std::filesystem::path& path);

}  // namespace rtf::scanner
