// Shared pieces of the small numeric-array readers (MAT-v5, .npy/.npz, zip): the error type they throw
// and a bounded whole-file read. The readers exist to compare against reference numbers that other
// tools saved (SPM's HRFs and design matrices), not as general-purpose converters.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace rtf::io {

// Anything wrong with an array file: unreadable, truncated, malformed, or a feature the readers do not
// support. The message names the file (or archive member) and the problem.
class ArrayFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Largest file, and largest decompressed member, the readers accept (they read whole files into memory).
constexpr uint64_t kMaxArrayFileBytes = uint64_t{1} << 30;

// The whole file's bytes; throws ArrayFileError when it cannot be read or is larger than `max_bytes`.
std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path, uint64_t max_bytes = kMaxArrayFileBytes);

}  // namespace rtf::io
