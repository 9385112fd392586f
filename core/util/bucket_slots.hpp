// The placement step of a stable counting sort spread over host threads (the connectome's edge sort and its CSR):
// items [0, n) are cut into `workers` contiguous ranges (host_ranges'), each item goes to one or more of `buckets`
// buckets, and every worker gets, per bucket, the first slot of its own items there, after those of the workers before
// it, so that a scatter over the same ranges keeps the items' order within each bucket. Memory: one array of
// `buckets` counts per worker.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/util/host_threads.hpp"

namespace rtf {

struct BucketSlots {
  std::vector<std::vector<int64_t>> next;  // per worker, per bucket: its next free slot (advance it as items land)
  std::vector<int64_t> start;              // per bucket: its first slot; start[buckets] = the items' slots in all
  size_t bad;                              // the first item the callback refused (n when none): nothing else is valid
};

// `to_buckets(item, land)` calls land(bucket) once per bucket the item goes to, and returns false to refuse the item
// (e.g. an index out of range), which stops its worker's count. The scatter then runs host_ranges(n, workers, ...)
// and puts worker w's item in bucket b at slot next[w][b]++.
template <typename ToBuckets>
BucketSlots bucket_slots(size_t n, size_t buckets, size_t workers, ToBuckets to_buckets) {
  workers = std::max<size_t>(1, std::min(workers, std::max<size_t>(n, 1)));  // as host_ranges takes them
  BucketSlots s{std::vector<std::vector<int64_t>>(workers), std::vector<int64_t>(buckets + 1, 0), n};
  std::vector<size_t> bad(workers, n);
  host_ranges(n, workers, [&](size_t begin, size_t end, size_t w) {
    std::vector<int64_t>& counts = s.next[w];
    counts.assign(buckets, 0);
    for (size_t k = begin; k < end; ++k) {
      if (!to_buckets(k, [&](size_t b) { ++counts[b]; })) {
        bad[w] = k;
        return;
      }
    }
  });
  for (size_t w = 0; w < workers; ++w) s.bad = std::min(s.bad, bad[w]);
  if (s.bad < n) return s;
  // Bucket sizes, their starts, then each worker's first slot in each bucket (workers in order).
  host_ranges(buckets, workers, [&](size_t begin, size_t end, size_t) {
    for (size_t b = begin; b < end; ++b) {
      for (const std::vector<int64_t>& counts : s.next) s.start[b + 1] += counts[b];
    }
  });
  for (size_t b = 0; b < buckets; ++b) s.start[b + 1] += s.start[b];
  host_ranges(buckets, workers, [&](size_t begin, size_t end, size_t) {
    for (size_t b = begin; b < end; ++b) {
      int64_t slot = s.start[b];
      for (std::vector<int64_t>& counts : s.next) slot += std::exchange(counts[b], slot);
    }
  });
  return s;
}

}  // namespace rtf
