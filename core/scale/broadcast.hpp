// Rank 0's values on every rank of a job (core/scale/ranks.hpp), for what rank 0 alone decides or computes before the
// chunks are dealt: the observed statistic, a decision to repeat a pass, a check that every rank holds rank 0's inputs.
// No-ops for a job of one process.
#pragma once

#include <string>
#include <vector>

#include "core/scale/chunk_bytes.hpp"
#include "core/scale/ranks.hpp"

namespace rtf {

// Rank 0's list replaces every other rank's.
template <typename T>
void broadcast_values(const Ranks& ranks, std::vector<T>& values) {
  if (ranks.size() == 1) return;
  ChunkWriter w;
  w.values(values);
  ChunkBytes bytes = w.take();
  ranks.broadcast(bytes);
  ChunkReader r(bytes);
  values = r.values<T>();
}

// Rank 0's flag on every rank.
bool broadcast_flag(const Ranks& ranks, bool flag);

// Whether this rank's `digest` (of inputs every rank prepared on its own) differs from rank 0's: rank 0's goes to every
// rank. Collective; false for a job of one process.
bool differs_from_root(const Ranks& ranks, const std::string& digest);

}  // namespace rtf
