// Payload checksum of the ingest protocol: zlib CRC-32, written on the wire as "crc32:xxxxxxxx" (8 lowercase hex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace rtf::stream {

// zlib crc32 (polynomial 0xEDB88320, initial value 0) of the bytes; any length. `previous` continues a
// checksum over several pieces: crc32(b, crc32(a)) == crc32(a then b).
uint32_t crc32(std::span<const std::byte> bytes, uint32_t previous = 0);

// "crc32:" followed by the value as 8 lowercase hex digits.
std::string format_checksum(uint32_t crc);

// The value of a string in exactly the form format_checksum writes; nullopt for anything else.
std::optional<uint32_t> parse_checksum(std::string_view text);

}  // namespace rtf::stream
