// Base64 (RFC 4648, the standard alphabet, '=' padding, no line breaks): the data: URIs of qa_report.html.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rtf {

std::string base64_encode(std::span<const uint8_t> bytes);

// The bytes, or nullopt when `text` is not canonical padded base64 (a length not a multiple of 4, a character outside
// the alphabet, '=' other than at the end, nonzero bits under the padding).
std::optional<std::vector<uint8_t>> base64_decode(std::string_view text);

}  // namespace rtf
