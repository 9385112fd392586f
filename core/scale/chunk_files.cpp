// Chunk files: "RTFCHNK1", the key, the chunk index, the payload's size and hash, the payload.
#include "core/scale/chunk_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string_view>

#include "core/io/atomic_file.hpp"
#include "core/util/hash.hpp"

namespace rtf {

namespace {

constexpr std::string_view kMagic = "RTFCHNK1";

std::string payload_hash(const ChunkBytes& bytes) {
  return hash_hex({std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())});
}

}  // namespace

std::filesystem::path chunk_file_path(const std::filesystem::path& dir, int64_t chunk) {
  return dir / fmt::format("chunk-{:06d}.bin", chunk);
}

void write_chunk_file(const std::filesystem::path& dir, const std::string& key, int64_t chunk,
                      const ChunkBytes& bytes) {
  std::filesystem::create_directories(dir);
  ChunkWriter w;
  for (char c : kMagic) w.value(c);
  w.values(std::vector<char>(key.begin(), key.end()));
  w.value(chunk);
  const std::string hash = payload_hash(bytes);
  w.values(std::vector<char>(hash.begin(), hash.end()));
  w.value(static_cast<uint64_t>(bytes.size()));  // the payload follows as ChunkReader::values<uint8_t> reads it
  const ChunkBytes header = w.take();
  write_parts_atomically(chunk_file_path(dir, chunk),
                         {std::string_view(reinterpret_cast<const char*>(header.data()), header.size()),
                          std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())});
}

std::optional<ChunkBytes> read_chunk_file(const std::filesystem::path& dir, const std::string& key, int64_t chunk,
                                          std::string* why) {
  const std::filesystem::path path = chunk_file_path(dir, chunk);
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return std::nullopt;
  ChunkBytes file(static_cast<size_t>(std::max<std::streamoff>(0, in.tellg())));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(file.data()), static_cast<std::streamsize>(file.size()));
  if (!in) {
    if (why != nullptr) *why = "damaged: cannot be read";
    return std::nullopt;
  }
  try {
    ChunkReader r(file);
    std::string magic;
    for (size_t k = 0; k < kMagic.size(); ++k) magic.push_back(r.value<char>());
    if (magic != kMagic) throw std::runtime_error("not a chunk file");
    const auto file_key = r.values<char>();
    if (std::string(file_key.begin(), file_key.end()) != key) {
      if (why != nullptr) *why = "from another job (other inputs or options)";
      return std::nullopt;
    }
    if (r.value<int64_t>() != chunk) throw std::runtime_error("holds another chunk");
    const auto hash = r.values<char>();
    ChunkBytes bytes = r.values<uint8_t, ChunkBytes>();
    if (!r.done()) throw std::runtime_error("longer than its contents");
    if (std::string(hash.begin(), hash.end()) != payload_hash(bytes)) throw std::runtime_error("hash mismatch");
    return bytes;
  } catch (const std::exception& e) {
    if (why != nullptr) *why = fmt::format("damaged: {}", e.what());
    return std::nullopt;
  }
}

void remove_chunk_files(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("chunk-") && (name.ends_with(".bin") || name.ends_with(".bin.partial"))) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
  if (std::filesystem::is_empty(dir, ec)) std::filesystem::remove(dir, ec);
}

}  // namespace rtf
