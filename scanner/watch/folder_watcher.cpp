// FolderWatcher (scanner/watch/folder_watcher.hpp): one small state machine per file (tracking -> queued -> reported,
// with retrying and given-up beside them), fed by inotify events or by directory scans. Scans and event reads happen
// only inside next_ready(), on the caller's thread; stop() wakes a waiting next_ready() through an eventfd.
#include "scanner/watch/folder_watcher.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace rtf::scanner {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::clamp(s, 0.0, 1e9)));
}

// What "unchanged" compares: size, mtime and inode (a rename over the file is a new file).
struct Signature {
  uintmax_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t inode = 0;
  bool operator==(const Signature&) const = default;
};

std::optional<Signature> regular_file_signature(const fs::path& path, nlink_t* links = nullptr) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  if (links) *links = st.st_nlink;
  return Signature{static_cast<uintmax_t>(st.st_size),
                   static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                   static_cast<uint64_t>(st.st_ino)};
}

bool ends_with_ignoring_case(std::string_view name, std::string_view suffix) {
  if (name.size() < suffix.size()) return false;
  return std::equal(suffix.begin(), suffix.end(), name.end() - static_cast<std::ptrdiff_t>(suffix.size()),
                    [](char lower, char c) { return lower == std::tolower(static_cast<unsigned char>(c)); });
}

// Hidden and temporary names, which writers rename once the file is complete.
bool is_ignored_name(std::string_view name) {
  if (name.empty() || name.front() == '.' || name.back() == '~') return true;
  for (std::string_view suffix : {".tmp", ".part", ".partial"}) {
    if (ends_with_ignoring_case(name, suffix)) return true;
  }
  return false;
}

bool is_real_directory(const fs::directory_entry& entry) {
  std::error_code ec;
  return entry.is_directory(ec) && !entry.is_symlink(ec);
}

fs::path normalized(const fs::path& path) {
  fs::path n = fs::absolute(path).lexically_normal();
  if (!n.has_filename() && n.has_relative_path()) n = n.parent_path();
  return n;
}

bool is_under(const std::string& key, const std::string& dir_prefix) {
  return key.size() > dir_prefix.size() && key.compare(0, dir_prefix.size(), dir_prefix) == 0;
}

// statfs f_type values of filesystems where writes from other machines raise no inotify event (linux/magic.h and the
// filesystems' own sources).
struct NetworkFilesystem {
  uint32_t magic;
  const char* name;
};
constexpr std::array<NetworkFilesystem, 16> kNetworkFilesystems{{
    {0x6969, "NFS"},
    {0x517B, "SMB"},
    {0xFF534D42, "CIFS"},
    {0xFE534D42, "SMB2"},
    {0x65735546, "FUSE"},
    {0x01021997, "9P"},
    {0x5346414F, "AFS"},
    {0x6B414653, "kAFS"},
    {0x73757245, "Coda"},
    {0x564C, "NCP"},
    {0x00C36400, "Ceph"},
    {0x01161970, "GFS2"},
    {0x7461636F, "OCFS2"},
    {0x0BD00BD0, "Lustre"},
    {0x47504653, "GPFS"},
    {0x786F4256, "VirtualBox shared folder"},
}};

constexpr uint32_t kWatchMask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_DELETE_SELF |
                                IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK;

enum class Phase { kTracking, kQueued, kReported, kRetrying, kGivenUp };

struct FileRecord {
  Phase phase = Phase::kTracking;
  bool settle_completes = false;  // whether being unchanged for settle_s completes it (always, when polling)
  Signature seen;                 // at the last look
  Clock::time_point seen_since;   // when `seen` was first observed
  Signature done;                 // when last queued: the version the caller has (or, not reporting it, had at start)
  uint64_t scan = 0;              // the last scan that found it (polling)
  std::optional<Clock::time_point> give_up_at;  // set by the first retry_later() until the caller accepts the file
  Clock::time_point next_retry_at;
  double backoff_s = 0;
};

}  // namespace

WatchError::WatchError(const fs::path& dir, const std::string& problem)
    : std::runtime_error("folder watch " + dir.string() + ": " + problem) {}

std::optional<std::string> network_filesystem_name(const fs::path& path) {
  struct statfs info {};
  if (::statfs(path.c_str(), &info) != 0) return std::nullopt;
  const auto magic = static_cast<uint32_t>(info.f_type);
  for (const auto& fs_kind : kNetworkFilesystems) {
    if (fs_kind.magic == magic) return fs_kind.name;
  }
  return std::nullopt;
}

struct FolderWatcher::State {
  fs::path root;
  WatchOptions options;
  mutable std::mutex mutex;
  std::atomic<bool> stopped{false};
  int wake_fd = -1;     // eventfd written by stop()
  int inotify_fd = -1;  // -1 while polling
  bool polling = false;
  std::string reason;
  std::string failure;  // set once the folder is gone: every later next_ready() throws it
  bool at_start = true;
  uint64_t scan_count = 0;
  Clock::time_point next_check_at{};
  std::unordered_map<int, fs::path> watches;  // inotify watch descriptor -> folder
  std::unordered_map<std::string, FileRecord> files;
  std::vector<std::string> queue;       // complete, not yet returned, in completion order
  std::vector<std::string> last_batch;  // returned by the last next_ready()
  std::vector<fs::path> skipped;

  ~State() {
    if (inotify_fd >= 0) ::close(inotify_fd);
    if (wake_fd >= 0) ::close(wake_fd);
  }

  [[noreturn]] void fail(const std::string& problem) {
    failure = problem;
    throw WatchError(root, problem);
  }

  // --- the per-file state machine -------------------------------------------------------------------------------

  static void observe(FileRecord& record, const Signature& signature, Clock::time_point now) {
    if (record.seen == signature) return;
    record.seen = signature;
    record.seen_since = now;
  }

  FileRecord& new_record(const std::string& key, const Signature& signature, Clock::time_point now) {
    FileRecord& record = files[key];
    record = FileRecord{};
    record.seen = record.done = signature;
    record.seen_since = now;
    if (at_start && !options.include_existing) record.phase = Phase::kReported;
    return record;
  }

  void enqueue(const std::string& key, FileRecord& record, std::vector<std::string>& out) {
    if (record.phase == Phase::kGivenUp) record.give_up_at.reset();  // rewritten since: a new file
    record.phase = Phase::kQueued;
    record.done = record.seen;
    record.settle_completes = polling;
    out.push_back(key);
  }

  void give_up(const std::string& key, FileRecord& record) {
    record.phase = Phase::kGivenUp;
    skipped.emplace_back(key);
    spdlog::warn("folder watch {}: giving up on {}: still incomplete {} s after it was first found incomplete",
                 root.string(), key, options.give_up_s);
  }

  void forget(const std::string& key) {
    files.erase(key);
    std::erase(queue, key);
  }

  // A timed look at a file (a scan, or inotify's periodic re-check): stability, back-off, give-up.
  void evaluate(const std::string& key, FileRecord& record, Clock::time_point now, std::vector<std::string>& out) {
    const bool settled = now - record.seen_since >= seconds(options.settle_s);
    const bool changed = record.seen != record.done;
    const bool settle_counts = polling || record.settle_completes;
    switch (record.phase) {
      case Phase::kTracking:
        if (settle_counts && settled) enqueue(key, record, out);
        break;
      case Phase::kReported:
      case Phase::kGivenUp:
        if (settle_counts && changed && settled) {
          enqueue(key, record, out);
        } else if (!polling && !changed && settled) {
          record.settle_completes = false;  // settled as reported: its watch will tell of any later change
        }
        break;
      case Phase::kRetrying:
        if (const bool grew = changed && settled; !grew && record.give_up_at && now >= *record.give_up_at) {
          give_up(key, record);
        } else if (grew || now >= record.next_retry_at) {
          enqueue(key, record, out);
        }
        break;
      case Phase::kQueued:
        break;
    }
  }

  // Files of one look become ready in the order they were last written.
  void append_in_write_order(std::vector<std::string>& ready) {
    std::sort(ready.begin(), ready.end(), [&](const std::string& a, const std::string& b) {
      const int64_t ta = files.at(a).seen.mtime_ns, tb = files.at(b).seen.mtime_ns;
      return ta != tb ? ta < tb : a < b;
    });
    queue.insert(queue.end(), ready.begin(), ready.end());
  }

  // --- polling ----------------------------------------------------------------------------------------------------

  void scan_folder(const fs::path& dir, Clock::time_point now, std::vector<std::string>& ready) {
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) {
      if (dir == root) fail("cannot list the folder: " + ec.message());
      return;  // a subfolder that vanished or cannot be read
    }
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) break;
      const fs::path path = it->path();
      if (is_ignored_name(path.filename().native())) continue;
      if (is_real_directory(*it)) {
        if (options.recursive) scan_folder(path, now, ready);
        continue;
      }
      const auto signature = regular_file_signature(path);
      if (!signature) continue;
      const std::string& key = path.native();
      auto found = files.find(key);
      FileRecord& record = found != files.end() ? found->second : new_record(key, *signature, now);
      record.scan = scan_count;
      observe(record, *signature, now);
      evaluate(key, record, now, ready);
    }
  }

  void scan(Clock::time_point now) {
    ++scan_count;
    std::error_code ec;
    if (!fs::is_directory(root, ec)) fail("the folder disappeared (deleted, renamed or unmounted)");
    std::vector<std::string> ready;
    scan_folder(root, now, ready);
    std::erase_if(files, [&](const auto& entry) {
      if (entry.second.scan == scan_count) return false;
      std::erase(queue, entry.first);
      return true;
    });
    append_in_write_order(ready);
  }

  void switch_to_polling(const std::string& why) {
    if (inotify_fd >= 0) ::close(inotify_fd);
    inotify_fd = -1;
    watches.clear();
    polling = true;
    reason = why;
    spdlog::warn("folder watch {}: {}; polling every {} s from now on", root.string(), why, options.poll_interval_s);
  }

  // --- inotify ----------------------------------------------------------------------------------------------------

  // A file found by listing a folder rather than by an event: complete once settled, unless its close comes first.
  void found_by_listing(const fs::path& path, Clock::time_point now) {
    const auto signature = regular_file_signature(path);
    if (!signature) return;
    const std::string& key = path.native();
    auto found = files.find(key);
    FileRecord& record = found != files.end() ? found->second : new_record(key, *signature, now);
    observe(record, *signature, now);
    if (record.phase != Phase::kQueued) record.settle_completes = true;
  }

  // Watches `dir` (and, recursive, its subfolders) and then lists it, so that nothing written between the folder's
  // creation and its watch is missed. Returns 0, or the errno that stopped it: ENOSPC (out of watches), or any
  // failure on the root.
  int watch_tree(const fs::path& dir, Clock::time_point now) {
    const int wd = ::inotify_add_watch(inotify_fd, dir.c_str(), kWatchMask);
    if (wd < 0) {
      const int error = errno;
      if (error == ENOSPC || dir == root) return error;
      if (error != ENOENT && error != ENOTDIR) {
        spdlog::warn("folder watch {}: cannot watch {}: {}", root.string(), dir.string(), std::strerror(error));
      }
      return 0;
    }
    watches[wd] = dir;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      const fs::path path = it->path();
      if (is_ignored_name(path.filename().native())) continue;
      if (is_real_directory(*it)) {
        if (!options.recursive) continue;
        if (const int error = watch_tree(path, now); error != 0) return error;
      } else {
        found_by_listing(path, now);
      }
    }
    return 0;
  }

  void watch_new_folder(const fs::path& dir, Clock::time_point now) {
    if (watch_tree(dir, now) == ENOSPC) {
      switch_to_polling("out of inotify watches (fs.inotify.max_user_watches) at " + dir.string());
    }
  }

  void forget_tree(const fs::path& dir) {
    const std::string prefix = dir.native() + "/";
    std::vector<std::string> gone;
    for (const auto& [key, record] : files) {
      if (is_under(key, prefix)) gone.push_back(key);
    }
    for (const auto& key : gone) forget(key);
    std::erase_if(watches, [&](const auto& entry) {
      if (entry.second != dir && !is_under(entry.second.native(), prefix)) return false;
      ::inotify_rm_watch(inotify_fd, entry.first);  // fails harmlessly for a deleted folder
      return true;
    });
  }

  // IN_CLOSE_WRITE or IN_MOVED_TO (or a hard link made to a complete file).
  void on_complete_event(const fs::path& path, Clock::time_point now) {
    const auto signature = regular_file_signature(path);
    if (!signature) return;  // gone again, or not a regular file
    const std::string& key = path.native();
    auto found = files.find(key);
    if (found == files.end()) {
      FileRecord& record = new_record(key, *signature, now);
      record.phase = Phase::kTracking;
      enqueue(key, record, queue);
      return;
    }
    FileRecord& record = found->second;
    observe(record, *signature, now);
    if (record.phase == Phase::kTracking || (record.phase != Phase::kQueued && record.seen != record.done)) {
      enqueue(key, record, queue);
    }
  }

  void rescan_after_overflow(Clock::time_point now) {
    spdlog::warn("folder watch {}: inotify event queue overflowed; listing the folder again", root.string());
    for (auto& [key, record] : files) record.settle_completes = true;
    std::erase_if(files, [](const auto& entry) { return !regular_file_signature(entry.first); });
    std::erase_if(queue, [&](const std::string& key) { return !files.contains(key); });
    watch_new_folder(root, now);
  }

  void handle_event(const inotify_event& event, Clock::time_point now) {
    if (event.mask & IN_Q_OVERFLOW) return rescan_after_overflow(now);
    const auto watch = watches.find(event.wd);
    if (watch == watches.end()) return;
    const fs::path dir = watch->second;
    if (event.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED)) {
      if (dir == root) fail("the folder disappeared (deleted, renamed or unmounted)");
      if (event.mask & IN_IGNORED) watches.erase(watch);
      return;
    }
    if (event.len == 0) return;
    const std::string name(event.name);
    const fs::path path = dir / name;
    if (event.mask & IN_ISDIR) {
      if (event.mask & (IN_DELETE | IN_MOVED_FROM)) {
        forget_tree(path);
      } else if (options.recursive && !is_ignored_name(name)) {
        watch_new_folder(path, now);  // IN_CREATE or IN_MOVED_TO
      }
      return;
    }
    if (is_ignored_name(name)) return;
    if (event.mask & (IN_DELETE | IN_MOVED_FROM)) {
      forget(path.native());
    } else if (event.mask & (IN_CLOSE_WRITE | IN_MOVED_TO)) {
      on_complete_event(path, now);
    } else if (event.mask & IN_CREATE) {
      nlink_t links = 0;
      if (regular_file_signature(path, &links) && links > 1) on_complete_event(path, now);  // `ln done-file name`
    }
  }

  void read_events(Clock::time_point now) {
    alignas(inotify_event) char buffer[64 * 1024];
    while (inotify_fd >= 0) {
      const ssize_t n = ::read(inotify_fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n <= 0) fail(std::string("reading inotify events: ") + std::strerror(errno));
      for (ssize_t offset = 0; offset < n && inotify_fd >= 0;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + offset);
        handle_event(*event, now);
        offset += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
    }
  }

  // Files only a timer can complete while inotify is in use: found by listing, or handed back by retry_later().
  bool has_timed_files() const {
    return std::any_of(files.begin(), files.end(), [](const auto& entry) {
      return entry.second.settle_completes || entry.second.phase == Phase::kRetrying;
    });
  }

  void check_timed_files(Clock::time_point now) {
    std::vector<std::string> ready, gone;
    for (auto& [key, record] : files) {
      if (!record.settle_completes && record.phase != Phase::kRetrying) continue;
      const auto signature = regular_file_signature(key);
      if (!signature) {
        gone.push_back(key);
        continue;
      }
      observe(record, *signature, now);
      evaluate(key, record, now, ready);
    }
    for (const auto& key : gone) forget(key);
    append_in_write_order(ready);
  }

  // Returns why inotify cannot watch the folder, or nullopt once it does.
  std::optional<std::string> start_inotify(Clock::time_point now) {
    inotify_fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_fd < 0) {
      const int error = errno;
      return std::string("inotify is unavailable (inotify_init1: ") + std::strerror(error) +
             (error == EMFILE ? ", limit fs.inotify.max_user_instances)" : ")");
    }
    if (const int error = watch_tree(root, now); error != 0) {
      ::close(inotify_fd);
      inotify_fd = -1;
      watches.clear();
      files.clear();
      if (error == ENOSPC) return std::string("out of inotify watches (fs.inotify.max_user_watches)");
      return std::string("inotify cannot watch it (") + std::strerror(error) + ")";
    }
    return std::nullopt;
  }

  // --- next_ready's loop ----------------------------------------------------------------------------------------

  // Files returned last time that the caller did not hand back are accepted: their retry episode ends.
  void accept_last_batch() {
    for (const auto& key : last_batch) {
      auto found = files.find(key);
      if (found != files.end() && found->second.phase == Phase::kReported) found->second.give_up_at.reset();
    }
    last_batch.clear();
  }

  // Reads pending events; scans (or re-checks timed files) at most every poll_interval_s, however often it is called.
  void look(Clock::time_point now) {
    if (!polling) read_events(now);
    if (now < next_check_at) return;
    next_check_at = now + seconds(options.poll_interval_s);
    if (polling) {
      scan(now);
    } else {
      check_timed_files(now);
    }
  }

  std::vector<fs::path> take_queue() {
    std::vector<fs::path> ready;
    ready.reserve(queue.size());
    for (const auto& key : queue) {
      files.at(key).phase = Phase::kReported;
      ready.emplace_back(key);
    }
    last_batch = std::move(queue);
    queue.clear();
    return ready;
  }

  // Sleeps until `until`, an inotify event, or stop().
  void wait(Clock::time_point until, int events_fd) const {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
    const int timeout_ms = static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
    std::array<pollfd, 2> fds{{{wake_fd, POLLIN, 0}, {events_fd, POLLIN, 0}}};
    ::poll(fds.data(), events_fd >= 0 ? 2 : 1, timeout_ms);
  }
};

FolderWatcher::FolderWatcher(const fs::path& dir, WatchOptions options) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.root = normalized(dir);
  s.options = options;
  std::error_code ec;
  if (!fs::exists(s.root, ec)) throw WatchError(s.root, "no such folder");
  if (!fs::is_directory(s.root, ec)) throw WatchError(s.root, "not a folder");
  s.wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s.wake_fd < 0) throw WatchError(s.root, std::string("eventfd: ") + std::strerror(errno));

  const auto now = Clock::now();
  if (options.mode == WatchMode::kPoll) {
    s.polling = true;
    s.reason = "polling was asked for";
  } else if (const auto network = network_filesystem_name(s.root); network && options.mode == WatchMode::kAuto) {
    s.polling = true;
    s.reason = "the folder is on a network/FUSE filesystem (" + *network + "), where inotify misses remote writes";
  } else if (auto failure = s.start_inotify(now)) {
    if (options.mode == WatchMode::kInotify) throw WatchError(s.root, *failure);
    s.polling = true;
    s.reason = *failure;
  } else {
    s.reason = network ? "inotify was asked for (on " + *network + ", remote writes go unseen)" : "inotify";
  }
  if (s.polling) {
    s.scan(now);
    s.next_check_at = now + seconds(options.poll_interval_s);
    spdlog::info("folder watch {}: polling every {} s, complete after {} s unchanged ({})", s.root.string(),
                 options.poll_interval_s, options.settle_s, s.reason);
  } else {
    spdlog::info("folder watch {}: {}", s.root.string(), s.reason);
  }
  s.at_start = false;
}

FolderWatcher::~FolderWatcher() = default;

std::vector<fs::path> FolderWatcher::next_ready(double timeout_s) {
  State& s = *state_;
  const auto deadline = Clock::now() + seconds(timeout_s);
  std::unique_lock lock(s.mutex);
  s.accept_last_batch();
  for (;;) {
    if (s.stopped) return {};
    if (!s.failure.empty()) throw WatchError(s.root, s.failure);
    const auto now = Clock::now();
    s.look(now);
    if (!s.queue.empty()) return s.take_queue();
    if (now >= deadline) return {};
    const bool timed = s.polling || s.has_timed_files();
    const auto until = timed ? std::min(deadline, s.next_check_at) : deadline;
    const int events_fd = s.inotify_fd;
    lock.unlock();
    s.wait(until, events_fd);
    lock.lock();
  }
}

void FolderWatcher::retry_later(const fs::path& file) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  const std::string key = normalized(file).native();
  const auto now = Clock::now();
  auto found = s.files.find(key);
  if (found == s.files.end()) {
    const auto signature = regular_file_signature(key);
    if (!signature) return;
    found = s.files.emplace(key, FileRecord{}).first;
    found->second.seen = found->second.done = *signature;
    found->second.seen_since = now;
  }
  FileRecord& record = found->second;
  if (record.phase == Phase::kGivenUp) return;
  std::erase(s.queue, key);
  if (!record.give_up_at) {
    record.give_up_at = now + seconds(s.options.give_up_s);
    record.backoff_s = s.options.retry_backoff_s;
  } else {
    record.backoff_s = std::min(record.backoff_s * 2, s.options.retry_backoff_s * 8);
  }
  if (now >= *record.give_up_at) return s.give_up(key, record);
  record.phase = Phase::kRetrying;
  record.next_retry_at = now + seconds(record.backoff_s);
}

void FolderWatcher::stop() {
  state_->stopped = true;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = ::write(state_->wake_fd, &one, sizeof one);
}

WatchMode FolderWatcher::mode() const {
  std::lock_guard lock(state_->mutex);
  return state_->polling ? WatchMode::kPoll : WatchMode::kInotify;
}

std::string FolderWatcher::mode_reason() const {
  std::lock_guard lock(state_->mutex);
  return state_->reason;
}

std::vector<fs::path> FolderWatcher::given_up() const {
  std::lock_guard lock(state_->mutex);
  return state_->skipped;
}

const fs::path& FolderWatcher::dir() const {
  return state_->root;
}

}  // namespace rtf::scanner
