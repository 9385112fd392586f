// A finished chunk's result kept as a file so that a stopped job can be started again from where it was
// (docs/scale.md): DIR/chunk-NNNNNN.bin holding the job's key, the chunk's index, its size and a hash of its bytes.
// Written beside under a temporary name and renamed, so a file there is whole; read back only when every check passes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "core/scale/chunk_bytes.hpp"

namespace rtf {

std::filesystem::path chunk_file_path(const std::filesystem::path& dir, int64_t chunk);

// Creates `dir` when needed. Throws std::runtime_error naming the file and the system's reason ("No space left on
// device") when it cannot be written; its temporary ("chunk-NNNNNN.bin.partial") is removed then.
void write_chunk_file(const std::filesystem::path& dir, const std::string& key, int64_t chunk, const ChunkBytes& bytes);

// The chunk's bytes, or nothing when there is no file, or it belongs to another job (key), or it is damaged (size,
// hash); `why`, given, then says which of the last two (empty when there is no file).
std::optional<ChunkBytes> read_chunk_file(const std::filesystem::path& dir, const std::string& key, int64_t chunk,
                                          std::string* why = nullptr);

// Removes the chunk files (and their temporary names) from `dir`, then `dir` itself if nothing else is left in it:
// a folder the user named keeps whatever else it holds. No error when it does not exist.
void remove_chunk_files(const std::filesystem::path& dir);

}  // namespace rtf
