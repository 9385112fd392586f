// Reading a file a few bytes at a time where a walk looks (issue 35): a scanner's export folder may hold a file of
// gigabytes that is not an image at all, and checking whether a file is DICOM must cost the same for it as for a
// header of a few kB. FileWindow keeps one window of the file in memory, filled by pread at the position asked for:
// the first fill is small (the preamble and marker of a file that turns out not to be DICOM cost 512 bytes), each
// further one twice the last, up to 64 kB, so a header walked element by element costs a handful of reads, and the
// values skipped over (pixel data) are never read. It counts the bytes it read, for the tests and the logs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace rtf::dicom {

class FileWindow {
 public:
  // Opens `path` for reading; ok() says whether that worked (error() why). The size is taken once, here: a file that
  // grows meanwhile is walked as it was, one that shrinks reads short (at() returns nullptr).
  explicit FileWindow(const std::filesystem::path& path);
  ~FileWindow();
  FileWindow(const FileWindow&) = delete;
  FileWindow& operator=(const FileWindow&) = delete;

  bool ok() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }
  uint64_t size() const { return size_; }

  // The bytes [pos, pos + count), count <= kMaxSpan, which the caller knows lie within size(): valid until the next
  // call. nullptr where the file no longer holds them (it shrank) or the read failed.
  const unsigned char* at(uint64_t pos, size_t count);

  uint64_t bytes_read() const { return bytes_read_; }

  static constexpr size_t kFirstFill = 512, kMaxFill = size_t{64} << 10, kMaxSpan = 1024;

 private:
  int fd_ = -1;
  std::string error_;
  uint64_t size_ = 0;
  std::vector<unsigned char> window_;
  uint64_t window_start_ = 0;
  size_t next_fill_ = kFirstFill;
  uint64_t bytes_read_ = 0;
};

}  // namespace rtf::dicom
