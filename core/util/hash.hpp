// Content hashing for cache keys (not cryptographic): a 128-bit digest as 32 hex characters.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rtf {

// Hashes the parts with their lengths, so ("ab","c") and ("a","bc") differ.
std::string hash_hex(const std::vector<std::string_view>& parts);

}  // namespace rtf
