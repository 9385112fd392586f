// pread into one growing window; see file_window.hpp.
#include "scanner/dicom/file_window.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rtf::dicom {

FileWindow::FileWindow(const std::filesystem::path& path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    error_ = std::strerror(errno);
    return;
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    error_ = std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    return;
  }
  size_ = static_cast<uint64_t>(std::max<off_t>(st.st_size, 0));
}

FileWindow::~FileWindow() {
  if (fd_ >= 0) ::close(fd_);
}

const unsigned char* FileWindow::at(uint64_t pos, size_t count) {
  if (fd_ < 0 || count > kMaxSpan || pos > size_ || count > size_ - pos) return nullptr;
  if (pos >= window_start_ && pos + count <= window_start_ + window_.size()) return &window_[pos - window_start_];
  const size_t fill = static_cast<size_t>(std::min<uint64_t>(std::max(next_fill_, count), size_ - pos));
  next_fill_ = std::min(next_fill_ * 2, kMaxFill);
  window_.resize(fill);
  window_start_ = pos;
  size_t got = 0;
  while (got < fill) {
    const ssize_t n = ::pread(fd_, window_.data() + got, fill - got, static_cast<off_t>(pos + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  bytes_read_ += got;
  window_.resize(got);
  return got >= count ? window_.data() : nullptr;
}

}  // namespace rtf::dicom
