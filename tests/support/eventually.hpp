// Waiting for something another thread or process does, without making the test depend on the machine's speed: poll
// `condition` until it holds, up to a bound far beyond any healthy machine (kPatience), so that the bound only turns a
// hang into a failure. Never use a short bound to assert that something happened "fast": speed is bench/'s business.
#pragma once

#include <chrono>
#include <functional>

namespace rtf::test {

// How long a test waits for an asynchronous event before calling it lost.
inline constexpr std::chrono::seconds kPatience{120};

// True as soon as `condition()` holds (polled every few ms); false only after `limit`.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit = kPatience);

}  // namespace rtf::test
