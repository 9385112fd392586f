// SIGINT and SIGTERM taken by one thread of a long-running command (the live server, the scanner watch): blocked in the
// calling thread and every thread it starts after, then waited for with sigtimedwait between other checks.
#pragma once

#include <signal.h>

#include <chrono>
#include <optional>

namespace rtf {

// Blocks SIGINT/SIGTERM in this thread (and the threads it starts) so that only wait_for_stop_signal sees them.
sigset_t block_stop_signals();

// Waits up to `timeout` for one of `signals`; returns its number, or nothing when none came.
std::optional<int> wait_for_stop_signal(const sigset_t& signals, std::chrono::milliseconds timeout);

}  // namespace rtf
