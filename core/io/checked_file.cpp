// CheckedFile over open/write/fsync/close, and the fsync helpers.
#include "core/io/checked_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace rtf::io {

namespace {

// fsync of `path` opened with `flags`; EINVAL (a file system without fsync for it) is not an error, nor, for a folder,
// EACCES: one that may be written but not read (mode -wx) cannot be opened to sync it.
void fsync_path(const std::filesystem::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0 && errno == EACCES && (flags & O_DIRECTORY) != 0) return;
  if (fd < 0) throw_io_error(path, "open", errno);
  if (::fsync(fd) != 0 && errno != EINVAL) {
    const int error = errno;
    ::close(fd);
    throw_io_error(path, "fsync", error);
  }
  if (::close(fd) != 0) throw_io_error(path, "close", errno);
}

}  // namespace

void throw_io_error(const std::filesystem::path& path, std::string_view operation, int error) {
  throw std::runtime_error(fmt::format("{}: {} failed: {}", path.string(), operation, std::strerror(error)));
}

CheckedFile::CheckedFile(std::filesystem::path path) : path_(std::move(path)) {
  do {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) throw_io_error(path_, "create", errno);
}

CheckedFile::~CheckedFile() {
  if (fd_ >= 0) ::close(fd_);
}

void CheckedFile::write(const void* bytes, size_t n) {
  if (fd_ < 0) throw std::logic_error(fmt::format("{}: write after close", path_.string()));
  const auto* at = static_cast<const unsigned char*>(bytes);
  for (size_t done = 0; done < n;) {
    const ssize_t wrote = ::write(fd_, at + done, n - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0) throw_io_error(path_, "write", errno);
    if (wrote == 0) throw_io_error(path_, "write", EIO);  // no progress and no reason: never loop forever
    done += static_cast<size_t>(wrote);
  }
}

void CheckedFile::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0 && errno != EINVAL) {  // EINVAL: a special file (e.g. /dev/null) that cannot sync
    const int error = errno;
    ::close(fd);
    throw_io_error(path_, "fsync", error);
  }
  // close is not retried on EINTR (Linux has released the descriptor either way); any error there is reported.
  if (::close(fd) != 0) throw_io_error(path_, "close", errno);
}

void fsync_directory(const std::filesystem::path& dir) {
  fsync_path(dir.empty() ? std::filesystem::path(".") : dir, O_RDONLY | O_DIRECTORY);
}

void fsync_file(const std::filesystem::path& path) {
  fsync_path(path, O_RDONLY);
}

}  // namespace rtf::io
