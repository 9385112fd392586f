// eventually(): poll with a short sleep until the condition holds or the (generous) limit passes.
#include "tests/support/eventually.hpp"

#include <thread>

namespace rtf::test {

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace rtf::test
