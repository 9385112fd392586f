// Sequential binary file reading and writing, plain or gzip-compressed (zlib), with errors as
// messages rather than errno codes. Used by the NIfTI reader and writer; knows nothing about NIfTI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace rtf::io {

// True if the file name ends in ".gz" (any case).
bool has_gz_extension(const std::filesystem::path& path);

class ByteReader {
 public:
  // Opens `path`; gzip decompression when `gzip` (zlib reads non-gzip content unchanged).
  // Throws std::runtime_error with strerror's text when the file cannot be opened.
  ByteReader(const std::filesystem::path& path, bool gzip);
  ~ByteReader();
  ByteReader(const ByteReader&) = delete;
  ByteReader& operator=(const ByteReader&) = delete;

  // Reads up to n bytes; returns how many were read (fewer only at end of data).
  // Throws std::runtime_error on a read or decompression error.
  size_t read(void* dst, size_t n);
  // Skips n bytes forward; returns how many were skipped (fewer only at end of data).
  uint64_t skip(uint64_t n);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class ByteWriter {
 public:
  // Creates/truncates `path`; gzip compression (level 1: fast, the data are noisy anyway) when `gzip`, in members of
  // 4 MiB of input compressed in parallel (the same bytes however the writes are cut).
  ByteWriter(const std::filesystem::path& path, bool gzip);
  ~ByteWriter();  // closes without reporting errors; call close() to check them
  ByteWriter(const ByteWriter&) = delete;
  ByteWriter& operator=(const ByteWriter&) = delete;

  // Both throw std::runtime_error "PATH: write failed: <the system's reason>" (or fsync, close) on failure.
  void write(const void* src, size_t n);
  void close();  // writes what is buffered, fsyncs and closes

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rtf::io
