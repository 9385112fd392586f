// Two independent 64-bit multiply-rotate lanes over 8-byte words, finalised and combined into 128 bits; large parts
// in fixed blocks hashed in parallel, then their digests hashed in order.
#include "core/util/hash.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <cstring>

#include "core/util/host_threads.hpp"

namespace rtf {
namespace {

constexpr size_t kBlockBytes = size_t{4} << 20;
constexpr size_t kParallelBytes = size_t{16} << 20;

uint64_t finalize(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

struct Digest {
  uint64_t a = 0, b = 0;
};

struct Hasher {
  uint64_t a = 0x9e3779b97f4a7c15ull;
  uint64_t b = 0xcbf29ce484222325ull;

  void word(uint64_t w) {
    a = std::rotl(a ^ (w * 0x87c37b91114253d5ull), 31) * 0x4cf5ad432745937full;
    b = std::rotl(b + (w * 0xc2b2ae3d27d4eb4full), 27) * 0x165667b19e3779f9ull + 0x52dce729u;
  }
  // The bytes 8 at a time; the last 0..7 packed into one word with their count, so every length differs.
  void bytes(std::string_view s) {
    const char* p = s.data();
    size_t n = s.size();
    for (; n >= 8; n -= 8, p += 8) {
      uint64_t w = 0;
      std::memcpy(&w, p, 8);
      word(w);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, p, n);
    word(tail ^ (static_cast<uint64_t>(n) << 56));
  }
  Digest digest() const { return {finalize(a), finalize(b ^ a)}; }
};

Digest hash_block(std::string_view s) {
  Hasher h;
  h.bytes(s);
  return h.digest();
}

}  // namespace

std::string hash_hex(const std::vector<std::string_view>& parts, size_t workers) {
  Hasher h;
  for (std::string_view part : parts) {
    h.word(part.size());
    if (part.size() < kParallelBytes) {
      h.bytes(part);
      continue;
    }
    // Fixed blocks, each hashed on its own; their digests in order stand for the part.
    const size_t blocks = (part.size() + kBlockBytes - 1) / kBlockBytes;
    std::vector<Digest> digests(blocks);
    host_ranges(blocks, workers > 0 ? workers : host_thread_count(), [&](size_t begin, size_t end, size_t) {
      for (size_t k = begin; k < end; ++k) digests[k] = hash_block(part.substr(k * kBlockBytes, kBlockBytes));
    });
    for (const Digest& d : digests) {
      h.word(d.a);
      h.word(d.b);
    }
  }
  const Digest d = h.digest();
  return fmt::format("{:016x}{:016x}", d.a, d.b);
}

}  // namespace rtf
