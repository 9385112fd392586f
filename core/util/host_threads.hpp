// Splitting host work over the machine's cores: contiguous ranges of [0, n), one thread each, joined before return.
// For the host's linear passes over large arrays (connectome candidates, per-node tie counts); deterministic results
// come from each thread owning its range.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace rtf {

// The number of threads host_ranges uses: the hardware's, 1 to 64.
inline size_t host_thread_count() {
  return std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 64);
}

// Calls f(begin, end, worker) for worker = 0 .. workers - 1 on its own thread, the ranges covering [0, n) in order.
template <typename F>
void host_ranges(size_t n, size_t workers, F f) {
  workers = std::max<size_t>(1, std::min(workers, std::max<size_t>(n, 1)));
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w) {
    const size_t begin = n * w / workers, end = n * (w + 1) / workers;
    threads.emplace_back([=, &f] { f(begin, end, w); });
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace rtf
