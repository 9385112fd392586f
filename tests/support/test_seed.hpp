// A fresh random seed per test run, printed so that a failure can be replayed: RTF_TEST_SEED=<seed> replays it.
#pragma once

#include <cstdint>

namespace rtf::test {

uint32_t test_seed();

}  // namespace rtf::test
