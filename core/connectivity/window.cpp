// Per-TR window bookkeeping of the connectivity classes.
#include "core/connectivity/window.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/device/cl_error.hpp"

namespace rtf {

void check_connectivity_options(std::string_view who, const ConnectivityOptions& options, int64_t slots) {
  if (!options.sliding && !options.cumulative) {
    throw std::invalid_argument(fmt::format("{}: neither the sliding nor the cumulative estimate is enabled", who));
  }
  if (options.sliding && (options.window < 2 || options.window > slots)) {
    throw std::invalid_argument(
        fmt::format("{}: a sliding window of {} volumes needs 2 <= W <= {} (the volumes the data buffer holds)", who,
                    options.window, slots));
  }
}

std::span<const int64_t> checked_window(std::string_view who, std::span<const int64_t> slots_in_time_order,
                                        int64_t newest_slot, int64_t capacity, int64_t window,
                                        std::vector<uint8_t>& seen) {
  if (slots_in_time_order.empty()) throw std::invalid_argument(fmt::format("{}: no volume in the window", who));
  if (static_cast<int64_t>(slots_in_time_order.size()) > capacity) {
    throw std::invalid_argument(
        fmt::format("{}: {} slots listed, the data buffer holds {}", who, slots_in_time_order.size(), capacity));
  }
  if (slots_in_time_order.back() != newest_slot) {
    throw std::invalid_argument(fmt::format("{}: the newest slot {} is not the last of the slots in time order ({})",
                                            who, newest_slot, slots_in_time_order.back()));
  }
  const auto first_bad = std::find_if(slots_in_time_order.begin(), slots_in_time_order.end(), [&](int64_t s) {
    if (s < 0 || s >= capacity || seen[static_cast<size_t>(s)]) return true;
    seen[static_cast<size_t>(s)] = 1;
    return false;
  });
  for (auto it = slots_in_time_order.begin(); it != first_bad; ++it) seen[static_cast<size_t>(*it)] = 0;
  if (first_bad != slots_in_time_order.end()) {
    throw std::invalid_argument(
        fmt::format("{}: slot {} is outside 0..{} or listed twice", who, *first_bad, capacity - 1));
  }
  const auto n = std::min<size_t>(slots_in_time_order.size(), static_cast<size_t>(window));
  return slots_in_time_order.last(n);
}

void enqueue_wait(cl_command_queue queue, const ClEvent* after) {
  if (after == nullptr || !*after) return;
  const cl_event e = after->get();
  RTF_CL_CHECK(clEnqueueBarrierWithWaitList(queue, 1, &e, nullptr));
}

void ring_slots_in_time_order(const DeviceRingBuffer& ring, std::vector<int64_t>& out) {
  out.clear();
  const int64_t newest = ring.newest();
  for (int64_t index = std::max<int64_t>(0, newest - ring.capacity() + 1); index <= newest; ++index) {
    if (ring.contains(index)) out.push_back(ring.slot_of(index));
  }
}

}  // namespace rtf
