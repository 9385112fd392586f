// Two independent 64-bit hashes (FNV-1a and a multiply-xorshift mix) combined into 128 bits.
#include "core/util/hash.hpp"

#include <fmt/format.h>

#include <cstdint>

namespace rtf {
namespace {

struct Hasher {
  uint64_t fnv = 0xcbf29ce484222325ull;
  uint64_t mix = 0x9e3779b97f4a7c15ull;

  void byte(unsigned char b) {
    fnv = (fnv ^ b) * 0x100000001b3ull;
    mix = (mix ^ b) * 0xff51afd7ed558ccdull;
    mix ^= mix >> 29;
  }
  void bytes(std::string_view s) {
    for (unsigned char c : s) byte(c);
  }
  void length(uint64_t n) {
    for (int i = 0; i < 8; ++i) byte(static_cast<unsigned char>(n >> (8 * i)));
  }
};

uint64_t finalize(uint64_t h) {
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

}  // namespace

std::string hash_hex(const std::vector<std::string_view>& parts) {
  Hasher h;
  for (auto part : parts) {
    h.length(part.size());
    h.bytes(part);
  }
  return fmt::format("{:016x}{:016x}", finalize(h.fnv), finalize(h.mix));
}

}  // namespace rtf
