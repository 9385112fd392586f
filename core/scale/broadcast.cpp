// broadcast_flag and differs_from_root: one broadcast of rank 0's byte or digest.
#include "core/scale/broadcast.hpp"

#include <algorithm>

namespace rtf {

bool broadcast_flag(const Ranks& ranks, bool flag) {
  ChunkBytes bytes{static_cast<uint8_t>(flag ? 1 : 0)};
  ranks.broadcast(bytes);
  return bytes.at(0) != 0;
}

bool differs_from_root(const Ranks& ranks, const std::string& digest) {
  if (ranks.size() == 1) return false;
  ChunkBytes root_digest(digest.begin(), digest.end());
  ranks.broadcast(root_digest);
  return !std::equal(digest.begin(), digest.end(), root_digest.begin(), root_digest.end());
}

}  // namespace rtf
