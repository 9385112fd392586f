// What the connectivity classes share: their options (sliding window length, which estimates to compute, the seed
// maps' vector width) and the per-TR window bookkeeping: checking the slots a caller passes and picking the sliding
// window from them.
// docs/algorithms/connectivity.md.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/ring/device_ring_buffer.hpp"

namespace rtf {

struct ConnectivityOptions {
  int64_t window = 100;    // W: volumes in the sliding window (at most the slots of the data buffer)
  bool sliding = true;     // correlation over the last W volumes, recomputed from them every TR
  bool cumulative = true;  // correlation over every volume so far, from running sums
  // SeedCorrelation's map kernels: voxels per work-item. 0 = preferred_vector_width (core/device/vector_width.hpp: 1 on
  // GPUs, the native float width on CPU devices), else 1, 2, 4, 8 or 16. RoiCorrelation does not use it.
  int vector_width = 0;
};

// Checks the options against a data buffer of `slots` volumes: at least one estimate, and 2 <= W <= slots when the
// sliding one is on. Throws std::invalid_argument naming `who`.
void check_connectivity_options(std::string_view who, const ConnectivityOptions& options, int64_t slots);

// Checks one TR's arguments and returns the sliding window: the last min(W, n) entries of `slots_in_time_order`.
// `slots_in_time_order`: the slots of the volumes held, oldest first, each in [0, capacity) and listed once;
// `newest_slot`: the volume that arrived this TR, which must be the last entry. `seen` is scratch of `capacity`
// entries (all zero on entry and on return). Throws std::invalid_argument naming `who` and the problem.
std::span<const int64_t> checked_window(std::string_view who, std::span<const int64_t> slots_in_time_order,
                                        int64_t newest_slot, int64_t capacity, int64_t window,
                                        std::vector<uint8_t>& seen);

// Makes everything enqueued on `queue` after this wait for `after` (if not null): a barrier with a wait list, e.g. for
// a ring upload that completes on the transfer queue.
void enqueue_wait(cl_command_queue queue, const ClEvent* after);

// The slots of the volumes `ring` holds, oldest first, into `out` (cleared first; allocates nothing once `out` has
// the ring's capacity reserved).
void ring_slots_in_time_order(const DeviceRingBuffer& ring, std::vector<int64_t>& out);

}  // namespace rtf
