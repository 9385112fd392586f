// Minimal zip reader for NumPy's .npz files: the central directory, members stored or deflated (zlib
// inflate), CRC-32 checked. No zip64, encryption, multi-disk archives or other compression methods;
// those are refused with ArrayFileError, as is anything truncated or inconsistent.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/io/array_file.hpp"

namespace rtf::io {

// Every member's name and decompressed bytes. `source` names the archive in error messages.
// Throws ArrayFileError for malformed or unsupported archives, duplicate names, or members larger
// than kMaxArrayFileBytes.
std::map<std::string, std::vector<uint8_t>> read_zip_members(std::span<const uint8_t> archive, std::string_view source);

}  // namespace rtf::io
