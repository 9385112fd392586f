// Writing a file where every failure is an error: a POSIX descriptor, writes looped over short writes and EINTR,
// fsync and close checked; each error is a std::runtime_error "PATH: OPERATION failed: strerror text". The writers of
// core/io (atomic_file, byte_stream, npz_writer) and OutputSet are built on it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>

namespace rtf::io {

// Throws std::runtime_error("PATH: OPERATION failed: <strerror(error)>").
[[noreturn]] void throw_io_error(const std::filesystem::path& path, std::string_view operation, int error);

class CheckedFile {
 public:
  // Creates or truncates `path` (mode 0644).
  explicit CheckedFile(std::filesystem::path path);
  ~CheckedFile();  // closes without reporting errors (after a failure); call close() to check them
  CheckedFile(const CheckedFile&) = delete;
  CheckedFile& operator=(const CheckedFile&) = delete;

  void write(const void* bytes, size_t n);
  void write(std::span<const unsigned char> bytes) { write(bytes.data(), bytes.size()); }
  void write(std::string_view text) { write(text.data(), text.size()); }
  // fsync, then close: the bytes are on the disk when it returns.
  void close();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

// fsync of a folder, so that a rename or a new name in it is on the disk. Throws as CheckedFile does (a file system
// that cannot sync folders, EINVAL, or a folder that may be written but not read, EACCES, is not an error).
void fsync_directory(const std::filesystem::path& dir);

// fsync of a file already written and closed (by any writer).
void fsync_file(const std::filesystem::path& path);

}  // namespace rtf::io
