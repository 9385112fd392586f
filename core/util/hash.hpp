// Content hashing for cache keys and chunk files (not cryptographic): a 128-bit digest as 32 hex characters. Parts
// are read 8 bytes at a time; a part of 16 MiB or more is hashed in 4 MiB blocks on all host cores and its digest is
// the hash of the blocks' digests, so the result never depends on the number of threads (inputs of gigabytes, e.g.
// the connectome's series at 1 mm, hash at memory speed).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rtf {

// Hashes the parts with their lengths, so ("ab","c") and ("a","bc") differ. `workers`: threads for large parts
// (0: host_thread_count()); the digest is the same for any value.
std::string hash_hex(const std::vector<std::string_view>& parts, size_t workers = 0);

}  // namespace rtf
