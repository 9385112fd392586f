// RowFile: one write(2) per row on an O_APPEND descriptor, a torn row cut back with ftruncate, rate-limited logging.
#include "stream/output/row_file.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace rtf::stream {

namespace {

bool power_of_ten(int64_t n) {
  while (n >= 10 && n % 10 == 0) n /= 10;
  return n == 1;
}

}  // namespace

RowFile::RowFile(std::filesystem::path path, Mode mode, std::string header, OutputFailures* failures)
    : path_(std::move(path)), mode_(mode), failures_(failures), header_(std::move(header)) {
  open();  // a failure is reported with the first row lost
}

RowFile::~RowFile() {
  close();  // logs its own errors
}

bool RowFile::open() {
  // O_APPEND always: after a torn row is cut back, the next row goes to the new end (no hole).
  const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (mode_ == Mode::kTruncate ? O_TRUNC : 0);
  fd_ = ::open(path_.c_str(), flags, 0644);
  if (fd_ < 0) {
    open_error_ = errno_message("cannot open", path_);
    return false;
  }
  struct stat st {};
  size_ = ::fstat(fd_, &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
  if (size_ == 0) pending_ = header_;
  return true;
}

void RowFile::lose(const std::string& error) {
  ++lost_;
  if (first_error_.empty()) first_error_ = error;
  if (failures_ != nullptr) failures_->row_lost(path_, error);
  if (failing_since_ < 0) {
    failing_since_ = lost_ - 1;
    spdlog::error(
        "{}; this row is lost, and so is each row until a write succeeds again (counted; the live "
        "path goes on)",
        error);
  } else if (power_of_ten(lost_)) {
    spdlog::warn("{}: {} rows lost so far ({})", path_.string(), lost_, error);
  }
}

bool RowFile::append(std::string_view row) {
  if (closed_) {
    lose(path_.string() + ": a row after the file was closed");
    return false;
  }
  if (fd_ < 0 && !open()) {
    lose(open_error_);
    return false;
  }
  std::string joined;
  std::string_view data = row;
  if (!pending_.empty()) {
    joined = pending_;
    joined += row;
    data = joined;
  }
  size_t done = 0;
  int error = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (done == data.size()) {
    size_ += static_cast<int64_t>(done);
    pending_.clear();
    ++written_;
    if (failing_since_ >= 0) {
      spdlog::warn("{}: writing again after {} lost rows ({} lost in all)", path_.string(), lost_ - failing_since_,
                   lost_);
      failing_since_ = -1;
    }
    return true;
  }
  errno = error;
  const std::string message = errno_message("cannot write", path_);
  if (done > 0 && ::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    // The torn row stays: start the next one on a line of its own.
    spdlog::error("{} (a torn row stays in the file)", errno_message("cannot cut back", path_));
    struct stat st {};
    if (::fstat(fd_, &st) == 0) size_ = static_cast<int64_t>(st.st_size);
    if (pending_.empty() || pending_.front() != '\n') pending_ = "\n" + pending_;
  }
  lose(message);
  return false;
}

std::string RowFile::close() {
  if (closed_) return {};
  closed_ = true;
  std::string error;
  if (fd_ >= 0) {
    // EINVAL / EROFS: a file that cannot be synced (a device such as /dev/full, a pipe); nothing is pending there.
    if (::fdatasync(fd_) != 0 && errno != EINVAL && errno != EROFS) error = errno_message("cannot sync", path_);
    if (::close(fd_) != 0 && error.empty()) error = errno_message("cannot close", path_);
    fd_ = -1;
  }
  if (!error.empty()) {
    spdlog::error("{}: rows written before may be lost", error);
    if (failures_ != nullptr) failures_->file_lost(path_, error);
  }
  if (lost_ > 0) {
    spdlog::error("{}: {} of {} rows not written (first: {})", path_.string(), lost_, lost_ + written_, first_error_);
  }
  return error;
}

}  // namespace rtf::stream
