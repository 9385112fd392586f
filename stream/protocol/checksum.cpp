// zlib CRC-32 of payloads and its "crc32:xxxxxxxx" text form.
#include "stream/protocol/checksum.hpp"

#include <zlib.h>

#include <algorithm>

namespace rtf::stream {

namespace {
constexpr std::string_view kPrefix = "crc32:";
constexpr size_t kChunk = size_t{1} << 30;  // zlib takes uInt lengths
}  // namespace

uint32_t crc32(std::span<const std::byte> bytes, uint32_t previous) {
  uLong crc = previous;
  while (!bytes.empty()) {
    const size_t n = std::min(bytes.size(), kChunk);
    crc = ::crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n));
    bytes = bytes.subspan(n);
  }
  return static_cast<uint32_t>(crc);
}

std::string format_checksum(uint32_t crc) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(kPrefix);
  for (int shift = 28; shift >= 0; shift -= 4) out.push_back(kHex[(crc >> shift) & 0xFu]);
  return out;
}

std::optional<uint32_t> parse_checksum(std::string_view text) {
  if (text.size() != kPrefix.size() + 8 || !text.starts_with(kPrefix)) return std::nullopt;
  uint32_t value = 0;
  for (const char c : text.substr(kPrefix.size())) {
    uint32_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<uint32_t>(c - 'a' + 10);
    } else {
      return std::nullopt;
    }
    value = (value << 4) | digit;
  }
  return value;
}

}  // namespace rtf::stream
