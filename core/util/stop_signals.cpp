// SIGINT/SIGTERM blocked and waited for (core/util/stop_signals.hpp).
#include "core/util/stop_signals.hpp"

#include <pthread.h>

namespace rtf {

sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

std::optional<int> wait_for_stop_signal(const sigset_t& signals, std::chrono::milliseconds timeout) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  timespec wait{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  siginfo_t info;
  if (sigtimedwait(&signals, &info, &wait) > 0) return info.si_signo;
  return std::nullopt;
}

}  // namespace rtf
