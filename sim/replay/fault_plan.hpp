// Fault injection for `rtfmri sim replay`: a seeded, reproducible plan of what happens to each volume's first
// transmission (dropped, duplicated, corrupted), the order volumes go out in (adjacent swaps), extra delays, and
// when the connection is torn down and re-established. docs/simulator.md.
#pragma once

#include <cstdint>
#include <vector>

#include "stream/sender/volume_sender.hpp"

namespace rtf::sim {

enum class CorruptTarget { kHeader, kPayload, kBoth };

struct FaultOptions {
  double drop = 0.0;                                    // probability that a volume's first transmission is lost
  double duplicate = 0.0;                               // probability that it is sent twice
  double reorder = 0.0;                                 // probability that a volume swaps places with the next one
  double corrupt = 0.0;                                 // probability that its first transmission is corrupted
  CorruptTarget corrupt_target = CorruptTarget::kBoth;  // kBoth: header or payload, half each
  double jitter_s = 0.0;                                // each send is delayed by a uniform random 0..jitter_s
  int64_t disconnect_after = 0;  // drop the connection after this many volumes (then reconnect); 0: never
  uint64_t seed = 1;

  bool any() const {
    return drop > 0 || duplicate > 0 || reorder > 0 || corrupt > 0 || jitter_s > 0 || disconnect_after > 0;
  }
};

struct PlannedSend {
  int64_t index = 0;  // volume index
  stream::Tamper tamper = stream::Tamper::kNone;
  double delay_s = 0.0;           // extra delay before sending (jitter)
  bool reconnect_before = false;  // tear down and re-open the connection before this send
};

// The sends for volumes first .. first+count-1, in the order they go out. Every index appears exactly once.
std::vector<PlannedSend> plan_faults(int64_t first, int64_t count, const FaultOptions& options);

}  // namespace rtf::sim
