// Steady-clock timestamps for ingest.
#include "stream/server/volume_handler.hpp"

#include <chrono>

namespace rtf::stream {

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace rtf::stream
