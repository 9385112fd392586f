// Bounded whole-file read for the array readers.
#include "core/io/array_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace rtf::io {

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path, uint64_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ArrayFileError(fmt::format("{}: is a directory", path.string()));
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw ArrayFileError(fmt::format("{}: {}", path.string(), std::strerror(errno)));
  std::vector<uint8_t> bytes;
  uint8_t chunk[65536];
  for (;;) {
    const size_t got = std::fread(chunk, 1, sizeof chunk, file.get());
    if (got > 0) {
      if (bytes.size() + got > max_bytes) {
        throw ArrayFileError(fmt::format("{}: larger than the {} bytes accepted", path.string(), max_bytes));
      }
      bytes.insert(bytes.end(), chunk, chunk + got);
    }
    if (got < sizeof chunk) {
      if (std::ferror(file.get())) throw ArrayFileError(fmt::format("{}: read error", path.string()));
      break;
    }
  }
  return bytes;
}

}  // namespace rtf::io
