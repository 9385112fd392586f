// SessionRecorder: POSIX file handling for the session directory (pwrite + fsync, truncate back on failure), the
// per-run state rebuilt from the journal on reopen, the bound on open runs' files, and end-of-run NIfTI writing.
#include "stream/recording/session_recorder.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

namespace rtf::stream {

namespace {

constexpr const char* kSoftwareVersion = "rtfmri 0.1.0";
constexpr int64_t kMaxDim = int64_t{1} << 16;

std::string errno_text(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// Writes all of `bytes` at `offset`; false (errno set) on failure.
bool pwrite_all(int fd, const void* bytes, size_t size, uint64_t offset) {
  const auto* p = static_cast<const char*>(bytes);
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, p, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = ENOSPC;
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

bool pread_all(int fd, void* bytes, size_t size, uint64_t offset) {
  auto* p = static_cast<char*>(bytes);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

// false (errno set) when the directory cannot be opened or synced.
bool fsync_dir(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return ok;
}

// Running out of these is the server's trouble, not the sender's: retried after closing other runs' files.
bool out_of_resources(int error_number) {
  return error_number == EMFILE || error_number == ENFILE || error_number == ENOMEM;
}

// What identifies a file's content as this process left it: a file changed or replaced while closed differs.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = -1;
  int64_t mtime_ns = -1;
  bool operator==(const FileId&) const = default;
};

FileId file_id(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return {};
  return {st.st_dev, st.st_ino, st.st_size, int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

std::string utc_time(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buffer[64];
  std::strftime(buffer, sizeof(buffer), format, &tm);
  return buffer;
}

RecordResult rejected(std::string reason, RejectKind kind = RejectKind::kInvalid) {
  return {RecordStatus::kRejected, std::move(reason), kind};
}

}  // namespace

bool valid_run_id(const std::string& run, std::string& reason) {
  if (run.empty() || run.size() > 64) {
    reason = "run id must be 1 to 64 characters";
    return false;
  }
  if (run.front() == '.') {
    reason = "run id must not start with '.'";
    return false;
  }
  for (char c : run) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) {
      reason = fmt::format("run id '{}' has a character outside [A-Za-z0-9._-]", run);
      return false;
    }
  }
  return true;
}

struct SessionRecorder::Run {
  std::string name;
  std::filesystem::path dir;
  int bin_fd = -1;  // both -1 while the files are closed (the state below is kept)
  int journal_fd = -1;
  uint64_t bin_size = 0;
  uint64_t journal_size = 0;
  std::optional<ImageHeader> grid;  // the run's first volume's grid
  std::set<int64_t> indices;        // indices journaled with a verified payload
  bool ended = false;
  bool loaded = false;                              // the state above was read from the journal
  std::chrono::steady_clock::time_point last_used;  // last volume (or open)
  std::list<Run*>::iterator lru;                    // its place in open_lru_ while open
  FileId bin_closed, journal_closed;                // the files as they were closed

  ~Run() {
    if (bin_fd >= 0) ::close(bin_fd);
    if (journal_fd >= 0) ::close(journal_fd);
  }
};

struct SessionRecorder::Pending {
  Run* run = nullptr;
  std::string run_name;
  int64_t index = 0;
  uint64_t bytes = 0;
  std::string line;  // the journal line
  ImageHeader grid;
};

SessionRecorder::SessionRecorder(std::filesystem::path dir, RecorderOptions options)
    : dir_(std::move(dir)), options_(std::move(options)), log_("recording failures", LogRateLimit{}, options_.clock) {
  open_limit_ = std::max<size_t>(options_.max_open_runs, 1);
  // The bound must fit the process's descriptor limit, with some kept for sockets, connections and output files.
  if (struct rlimit limit{}; ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    const auto soft = static_cast<size_t>(limit.rlim_cur);
    const size_t reserve = std::clamp<size_t>(soft / 2, 16, 64);
    const size_t fit = std::max<size_t>(1, soft > reserve ? (soft - reserve) / 2 : 0);
    if (fit < open_limit_) {
      spdlog::warn(
          "recording: max_open_runs {} lowered to {}: RLIMIT_NOFILE is {} and {} descriptors are kept for sockets and "
          "outputs (raise `ulimit -n` to keep more runs' files open)",
          open_limit_, fit, soft, reserve);
      open_limit_ = fit;
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(dir_ / "runs", ec);
  if (ec) throw RecordingError(fmt::format("cannot create {}: {}", (dir_ / "runs").string(), ec.message()));
  lock_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock_fd_ < 0) throw RecordingError(errno_text("cannot open " + dir_.string()));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const std::string reason = errno_text("cannot lock " + dir_.string() + " (another recorder is using it?)");
    ::close(lock_fd_);
    throw RecordingError(reason);
  }
  const std::filesystem::path info = dir_ / "session.json";
  if (std::filesystem::exists(info, ec)) {
    try {
      std::ifstream in(info);
      const nlohmann::json j = nlohmann::json::parse(in);
      if (j.contains("session_id") && j.at("session_id").is_string()) session_id_ = j.at("session_id");
      created_ = j.value("created", std::string());
    } catch (const std::exception& e) {
      ::close(lock_fd_);
      throw RecordingError(fmt::format("{} is not a readable session file: {}", info.string(), e.what()));
    }
  } else {
    session_id_ = options_.session_id;
    created_ = utc_time("%Y-%m-%dT%H:%M:%SZ");
    if (std::string reason = write_session_json(); !reason.empty()) {
      ::close(lock_fd_);
      throw RecordingError(reason);
    }
  }
  fsync_dir(dir_);
}

std::string SessionRecorder::write_session_json() const {
  const nlohmann::json j = {{"format", "rtfmri-session"},
                            {"format_version", 1},
                            {"session_id", session_id_.empty() ? nlohmann::json(nullptr) : nlohmann::json(session_id_)},
                            {"created", created_},
                            {"software_version", kSoftwareVersion},
                            {"fsync_policy", options_.fsync == FsyncPolicy::kEveryVolume ? "every_volume" : "none"}};
  const std::string text = j.dump(2) + "\n";
  const std::filesystem::path info = dir_ / "session.json";
  const std::filesystem::path tmp = dir_ / "session.json.tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const bool ok = fd >= 0 && pwrite_all(fd, text.data(), text.size(), 0) && ::fsync(fd) == 0;
  const std::string reason = ok ? "" : errno_text("cannot write " + tmp.string());
  if (fd >= 0) ::close(fd);
  if (!ok) return reason;
  if (::rename(tmp.c_str(), info.c_str()) != 0) return errno_text("cannot create " + info.string());
  fsync_dir(dir_);
  return {};
}

bool SessionRecorder::bind_session(const std::string& id, std::string& reason) {
  if (id == session_id_) return true;
  if (!session_id_.empty()) {
    reason = fmt::format("this server records session '{}' in {}; got session '{}'", session_id_, dir_.string(), id);
    return false;
  }
  session_id_ = id;
  if (std::string error = write_session_json(); !error.empty()) {
    session_id_.clear();
    reason = error;
    return false;
  }
  return true;
}

std::optional<SessionRecorder::RunState> SessionRecorder::run_state(const std::string& name, int64_t num_volumes,
                                                                    std::string* error) {
  std::string why;
  RejectKind kind = RejectKind::kNone;
  Run* run = find_run(name, why, kind);
  if (run == nullptr) {
    if (error != nullptr) *error = why;
    return std::nullopt;
  }
  RunState state;
  state.ended = run->ended;
  state.recorded = static_cast<int64_t>(run->indices.size());
  for (int64_t i = 0; i < num_volumes; ++i) {
    if (run->indices.count(i) == 0) state.missing.push_back(i);
  }
  return state;
}

SessionRecorder::~SessionRecorder() {
  open_lru_.clear();
  runs_.clear();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::chrono::steady_clock::time_point SessionRecorder::now() const {
  return options_.clock ? options_.clock() : std::chrono::steady_clock::now();
}

void SessionRecorder::touch(Run& run) {
  run.last_used = now();
  if (run.bin_fd >= 0) open_lru_.splice(open_lru_.end(), open_lru_, run.lru);
}

void SessionRecorder::close_files(Run& run) {
  if (run.bin_fd < 0 && run.journal_fd < 0) return;
  run.bin_closed = run.bin_fd >= 0 ? file_id(run.bin_fd) : FileId{};
  run.journal_closed = run.journal_fd >= 0 ? file_id(run.journal_fd) : FileId{};
  if (run.bin_fd >= 0) ::close(run.bin_fd);
  if (run.journal_fd >= 0) ::close(run.journal_fd);
  run.bin_fd = run.journal_fd = -1;
  open_lru_.erase(run.lru);
  ++counters_.closed;
}

void SessionRecorder::close_idle_runs() {
  log_.poll();
  if (options_.run_idle_close <= std::chrono::steady_clock::duration::zero()) return;
  const auto t = now();
  for (auto it = open_lru_.begin(); it != open_lru_.end();) {
    Run* run = *it++;
    if (t - run->last_used < options_.run_idle_close) break;  // the rest were used later
    if (!pending_ || pending_->run != run) close_files(*run);
  }
}

size_t SessionRecorder::free_descriptors(const Run* keep) {
  const size_t target = std::max<size_t>(1, open_lru_.size() / 2);
  size_t closed = 0;
  for (auto it = open_lru_.begin(); it != open_lru_.end() && closed < target;) {
    Run* run = *it++;
    if (run == keep || (pending_ && pending_->run == run)) continue;
    close_files(*run);
    ++closed;
  }
  return closed;
}

std::string SessionRecorder::out_of_descriptors(const std::string& what, int error_number) const {
  struct rlimit limit {};
  const bool known = ::getrlimit(RLIMIT_NOFILE, &limit) == 0;
  auto text = [](rlim_t v) { return v == RLIM_INFINITY ? std::string("unlimited") : std::to_string(v); };
  return fmt::format("out of file descriptors {}: {} ({} runs' files open, max_open_runs {}, RLIMIT_NOFILE {})", what,
                     std::strerror(error_number), open_lru_.size(), open_limit_,
                     known ? text(limit.rlim_cur) + " (hard " + text(limit.rlim_max) + ")" : "unknown");
}

bool SessionRecorder::open_files(Run& run, std::string& error, RejectKind& kind) {
  // Room first, so that the bound holds: the least recently used runs' files close.
  for (auto it = open_lru_.begin(); it != open_lru_.end() && open_lru_.size() >= open_limit_;) {
    Run* other = *it++;
    if (other != &run && (!pending_ || pending_->run != other)) close_files(*other);
  }
  auto attempt = [&] {
    const std::filesystem::path bin_path = run.dir / "volumes.bin";
    const std::filesystem::path journal_path = run.dir / "journal.jsonl";
    run.bin_fd = ::open(bin_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (run.bin_fd >= 0) run.journal_fd = ::open(journal_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    // The first time, the directory entries are made durable too (the files' in the run's, the run's in runs/).
    if (run.bin_fd >= 0 && run.journal_fd >= 0 && (run.loaded || (fsync_dir(run.dir) && fsync_dir(dir_ / "runs")))) {
      return 0;
    }
    const int saved = errno;
    if (run.bin_fd >= 0) ::close(run.bin_fd);
    if (run.journal_fd >= 0) ::close(run.journal_fd);
    run.bin_fd = run.journal_fd = -1;
    return saved;
  };
  int failure = attempt();
  if (failure != 0 && out_of_resources(failure)) {
    // Not the sender's fault: make room by closing other runs' files (they reopen on demand), and try once more.
    ++counters_.descriptor_retries;
    free_descriptors(&run);
    failure = attempt();
  }
  if (failure != 0) {
    const std::string what = "opening the files of run " + run.name;
    kind = out_of_resources(failure) ? RejectKind::kResource : RejectKind::kWriteFailed;
    error = failure == EMFILE || failure == ENFILE ? out_of_descriptors(what, failure)
                                                   : what + ": " + std::strerror(failure);
    return false;
  }
  open_lru_.push_back(&run);
  run.lru = std::prev(open_lru_.end());
  touch(run);
  return true;
}

SessionRecorder::Run* SessionRecorder::find_run(const std::string& name, std::string& error, RejectKind& kind) {
  close_idle_runs();
  if (auto it = runs_.find(name); it != runs_.end()) return it->second.get();
  if (!valid_run_id(name, error)) {
    kind = RejectKind::kInvalid;
    return nullptr;
  }
  auto run = std::make_unique<Run>();
  run->name = name;
  run->dir = dir_ / "runs" / name;
  std::error_code ec;
  std::filesystem::create_directories(run->dir, ec);
  if (ec) {
    error = fmt::format("cannot create {}: {}", run->dir.string(), ec.message());
    kind = out_of_resources(ec.value()) ? RejectKind::kResource : RejectKind::kWriteFailed;
    return nullptr;
  }
  if (!open_files(*run, error, kind)) return nullptr;
  if (!load_journal(*run, error)) {
    close_files(*run);
    kind = RejectKind::kWriteFailed;
    return nullptr;
  }
  Run* raw = run.get();
  runs_.emplace(name, std::move(run));
  return raw;
}

bool SessionRecorder::ensure_open(Run& run, std::string& error, RejectKind& kind) {
  if (run.bin_fd >= 0) {
    touch(run);
    return true;
  }
  if (!open_files(run, error, kind)) return false;
  ++counters_.reopened;
  if (file_id(run.bin_fd) == run.bin_closed && file_id(run.journal_fd) == run.journal_closed) return true;
  // Changed while closed (by hand, or a file replaced): trust only the journal, as on a restart.
  spdlog::warn("run {}: its files changed while they were closed; rebuilding its state from the journal", run.name);
  ++counters_.rebuilt;
  if (load_journal(run, error)) return true;
  close_files(run);
  kind = RejectKind::kWriteFailed;
  return false;
}

// Rebuilds the index set from the journal (read through the open descriptor); cuts a torn journal line and any
// payload bytes no journal line refers to (written just before a crash, never acknowledged).
bool SessionRecorder::load_journal(Run& run, std::string& error) {
  const std::filesystem::path bin_path = run.dir / "volumes.bin";
  const std::filesystem::path journal_path = run.dir / "journal.jsonl";
  run.indices.clear();
  run.grid.reset();
  run.ended = false;
  const FileId journal_id = file_id(run.journal_fd);
  std::string text(journal_id.size > 0 ? static_cast<size_t>(journal_id.size) : 0, '\0');
  if (journal_id.size < 0 || !pread_all(run.journal_fd, text.data(), text.size(), 0)) {
    error = errno_text("cannot read " + journal_path.string());
    return false;
  }
  const JournalContents journal = parse_journal(text);
  const FileId bin_id = file_id(run.bin_fd);
  if (bin_id.size < 0) {
    error = errno_text("cannot stat " + bin_path.string());
    return false;
  }
  const auto bin_file_size = static_cast<uint64_t>(bin_id.size);
  uint64_t journaled_end = 0;
  std::vector<std::byte> payload;
  for (const JournalEntry& e : journal.entries) {
    journaled_end = std::max(journaled_end, e.offset + e.length);
    if (run.indices.count(e.index) != 0 || e.offset + e.length > bin_file_size) continue;
    payload.resize(e.length);
    if (!pread_all(run.bin_fd, payload.data(), payload.size(), e.offset) || crc32(payload) != e.crc32) continue;
    if (run.grid && !grid_mismatch(*run.grid, e.grid).empty()) continue;
    if (!run.grid) run.grid = e.grid;
    run.indices.insert(e.index);
  }
  if (journal.torn_tail) {
    spdlog::warn("run {}: dropping a torn last journal line (crash during a write)", run.name);
    if (::ftruncate(run.journal_fd, static_cast<off_t>(journal.valid_bytes)) != 0) {
      error = errno_text("cannot truncate " + journal_path.string());
      return false;
    }
  }
  if (bin_file_size > journaled_end) {
    spdlog::warn("run {}: dropping {} unjournaled payload bytes (crash before the journal line)", run.name,
                 bin_file_size - journaled_end);
    if (::ftruncate(run.bin_fd, static_cast<off_t>(journaled_end)) != 0) {
      error = errno_text("cannot truncate " + bin_path.string());
      return false;
    }
  }
  run.bin_size = journaled_end;  // never overlap a range a journal line claims, even one past the file's end
  run.journal_size = journal.valid_bytes;
  run.ended = journal.ended;
  run.loaded = true;
  return true;
}

RecordResult SessionRecorder::record(const RecordedVolume& v) {
  RecordResult r = begin_record(v);
  return r.status == RecordStatus::kRecorded ? commit_record() : r;
}

RecordResult SessionRecorder::begin_record(const RecordedVolume& v) {
  if (pending_) throw std::logic_error("SessionRecorder::begin_record: the previous volume was not committed");
  const ImageHeader& g = v.grid;
  for (int64_t d : g.dims) {
    if (d < 1 || d > kMaxDim) return rejected(fmt::format("dimension {} outside [1, {}]", d, kMaxDim));
  }
  const size_t bpv = bytes_per_voxel(g.source_type);
  if (bpv == 0) return rejected(fmt::format("unknown datatype code {}", static_cast<int>(g.source_type)));
  const uint64_t expected = static_cast<uint64_t>(g.voxels_per_volume()) * bpv;
  if (v.payload.size() != expected) {
    return rejected(fmt::format("payload is {} bytes, the grid needs {}", v.payload.size(), expected));
  }
  if (v.index < 0) return rejected(fmt::format("negative volume index {}", v.index));
  if (!g.affine.allFinite() || !std::isfinite(g.tr_s) || g.tr_s < 0) return rejected("affine or TR not finite");

  std::string error;
  RejectKind kind = RejectKind::kNone;
  Run* run = find_run(v.run, error, kind);
  if (run == nullptr) return rejected(error, kind);
  // Files first (a reopening checks them, and re-reads the journal if they changed), then the duplicate check.
  if (!run->ended && !ensure_open(*run, error, kind)) return rejected(error, kind);
  if (run->indices.count(v.index) != 0) {
    return {RecordStatus::kDuplicate, fmt::format("volume {} of run {} is already recorded", v.index, v.run)};
  }
  if (run->ended) return rejected(fmt::format("run {} has ended", v.run), RejectKind::kRunEnded);
  if (run->grid) {
    if (std::string why = grid_mismatch(*run->grid, g); !why.empty()) return rejected(why, RejectKind::kInconsistent);
  }

  JournalEntry entry;
  entry.index = v.index;
  entry.offset = run->bin_size;
  entry.length = expected;
  entry.crc32 = v.crc32 ? *v.crc32 : crc32(v.payload);
  entry.grid = g;
  entry.grid.num_volumes = 1;
  entry.grid.description.clear();
  entry.received_s = v.received_s;
  pending_ = std::make_unique<Pending>(Pending{run, v.run, v.index, expected, encode_journal_entry(entry), entry.grid});
  if (!pwrite_all(run->bin_fd, v.payload.data(), v.payload.size(), entry.offset)) {
    return fail_pending("writing volumes.bin");
  }
  return {RecordStatus::kRecorded, {}};
}

// Cuts the files back to where they were before the pending volume, and rejects it with errno's text.
RecordResult SessionRecorder::fail_pending(const std::string& what) {
  const std::string reason = errno_text(what);
  const std::unique_ptr<Pending> p = std::move(pending_);
  if (::ftruncate(p->run->bin_fd, static_cast<off_t>(p->run->bin_size)) != 0 ||
      ::ftruncate(p->run->journal_fd, static_cast<off_t>(p->run->journal_size)) != 0) {
    log_.error("cut back failed", "run {}: could not cut the files back after a failed write: {}", p->run_name,
               std::strerror(errno));
  }
  log_.error("volume not recorded", "run {}: volume {} not recorded: {}", p->run_name, p->index, reason);
  return rejected(reason, RejectKind::kWriteFailed);
}

RecordResult SessionRecorder::commit_record() {
  if (!pending_) throw std::logic_error("SessionRecorder::commit_record: nothing to commit");
  Run* run = pending_->run;
  const std::string& line = pending_->line;
  const bool sync = options_.fsync == FsyncPolicy::kEveryVolume;
  // Payload first, then the journal line: a journal line always refers to complete payload bytes.
  if (sync && ::fdatasync(run->bin_fd) != 0) return fail_pending("syncing volumes.bin");
  if (!pwrite_all(run->journal_fd, line.data(), line.size(), run->journal_size)) {
    return fail_pending("writing journal.jsonl");
  }
  if (sync && ::fdatasync(run->journal_fd) != 0) return fail_pending("syncing journal.jsonl");

  run->bin_size += pending_->bytes;
  run->journal_size += line.size();
  run->indices.insert(pending_->index);
  if (!run->grid) run->grid = pending_->grid;
  pending_.reset();
  return {RecordStatus::kRecorded, {}};
}

std::string SessionRecorder::end_run(const std::string& name) {
  std::string error;
  RejectKind kind = RejectKind::kNone;
  Run* run = find_run(name, error, kind);
  if (run == nullptr) return error;
  if (run->ended) return {};
  if (!ensure_open(*run, error, kind)) return error;
  const std::string line = encode_end_of_run(static_cast<int64_t>(run->indices.size()));
  if (!pwrite_all(run->journal_fd, line.data(), line.size(), run->journal_size) || ::fdatasync(run->journal_fd) != 0) {
    error = errno_text("writing the end of run to journal.jsonl");
    if (::ftruncate(run->journal_fd, static_cast<off_t>(run->journal_size)) != 0) {
      spdlog::error("run {}: could not cut journal.jsonl back: {}", name, std::strerror(errno));
    }
    return error;
  }
  run->journal_size += line.size();
  run->ended = true;
  close_files(*run);  // an ended run writes nothing more (its indices stay, for duplicates)
  return {};
}

RunRecovery SessionRecorder::finish_run(const std::string& name) {
  RunRecovery result;
  result.run = name;
  result.error = end_run(name);
  if (!result.error.empty()) return result;
  try {
    return build_run_nifti(run_dir(name), read_journal(run_dir(name) / "journal.jsonl"));
  } catch (const std::exception& e) {
    result.error = e.what();
    return result;
  }
}

}  // namespace rtf::stream
