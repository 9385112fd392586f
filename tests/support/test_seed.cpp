// test_seed: std::random_device, or RTF_TEST_SEED when set; printed either way.
#include "tests/support/test_seed.hpp"

#include <cstdlib>
#include <iostream>
#include <random>
#include <string>

namespace rtf::test {

uint32_t test_seed() {
  const char* replay = std::getenv("RTF_TEST_SEED");
  const uint32_t seed = replay ? static_cast<uint32_t>(std::stoul(replay)) : std::random_device{}();
  std::cout << "seed " << seed << " (RTF_TEST_SEED replays it)\n";
  return seed;
}

}  // namespace rtf::test
