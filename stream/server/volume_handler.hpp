// The seam between a transport (the protocol-1 ROUTER server, the pyneal PAIR receiver) and ingest: a transport
// turns what arrived into a validated-shape VolumeHeader plus its payload (x fastest, little-endian) and hands both
// to a VolumeHandler, which checks, records and acknowledges it. The handler's Reply is what the sender is told.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "stream/protocol/messages.hpp"
#include "stream/protocol/volume_header.hpp"

namespace rtf::stream {

// `received_ns`: steady-clock time (std::chrono::steady_clock, ns since its epoch) at which the last frame of
// the volume arrived. Returns Ack (recorded, or duplicate) or Nack (nothing recorded). Never throws.
using VolumeHandler =
    std::function<Reply(const VolumeHeader& header, std::vector<std::byte>&& payload, int64_t received_ns)>;

// Steady-clock now in ns, the clock of every ingest timestamp.
int64_t steady_now_ns();

}  // namespace rtf::stream
