// ctest-label: gpu
// Philox4x32-10: our host twin (core/random/philox.hpp) against Random123's philox4x32_R(10, ...) (third party:
// Debian's librandom123-dev) on its known-answer vectors and 10,000 random counters and keys; the device
// (kernels/philox.clh through kernels/philox_words.cl) against the host on 1,003 random inputs plus the extremes, word
// for word, and the float uniforms bit for bit.
#include <Random123/philox.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/launch.hpp"
#include "core/random/philox.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

random::PhiloxCounter random123(const random::PhiloxCounter& c, const random::PhiloxKey& k) {
  r123::Philox4x32_R<10> generator;
  const r123::Philox4x32_R<10>::ctr_type counter = {{c[0], c[1], c[2], c[3]}};
  const r123::Philox4x32_R<10>::key_type key = {{k[0], k[1]}};
  const auto r = generator(counter, key);
  return {r[0], r[1], r[2], r[3]};
}

TEST(Philox, HostEqualsRandom123) {
  // Random123's known-answer vectors (its kat_vectors file) and the same through its implementation.
  EXPECT_EQ(random::philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (random::PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(random::philox4x32_10({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}),
            (random::PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(random::philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (random::PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
  std::mt19937 rng(test::test_seed());
  const auto word = [&rng] { return static_cast<uint32_t>(rng()); };
  for (int trial = 0; trial < 10000; ++trial) {
    const random::PhiloxCounter c{word(), word(), word(), word()};
    const random::PhiloxKey k{word(), word()};
    ASSERT_EQ(random::philox4x32_10(c, k), random123(c, k)) << "trial " << trial;
  }
  static_assert(random::philox4x32_10({0, 0, 0, 0}, {0, 0})[0] == 0x6627e8d5u, "usable at compile time");
}

TEST(Philox, UniformsStayInsideTheOpenInterval) {
  EXPECT_EQ(random::uniform_float(0), 0x1.0p-24f);
  EXPECT_LT(random::uniform_float(~0u), 1.0f);
  EXPECT_EQ(random::uniform_float(~0u), 1.0f - 0x1.0p-24f);
  EXPECT_EQ(random::uniform_double(0, 0), 0x1.0p-53);
  EXPECT_LT(random::uniform_double(~0u, ~0u), 1.0);
  EXPECT_EQ(random::uniform_double(~0u, ~0u), 1.0 - 0x1.0p-53);
  // Every float value is exact: the mean of all 2^23 values of m is 1/2.
  double sum = 0;
  for (uint32_t m = 0; m < (1u << 23); ++m) sum += random::uniform_float(m << 9);
  EXPECT_EQ(sum / (1u << 23), 0.5);
}

TEST(Philox, DeviceEqualsHost) {
  Device& device = test::test_device();
  std::mt19937 rng(test::test_seed());
  const int n = 1005;
  std::vector<uint32_t> counters(4 * n), keys(2 * n);
  for (uint32_t& c : counters) c = static_cast<uint32_t>(rng());
  for (uint32_t& k : keys) k = static_cast<uint32_t>(rng());
  std::fill_n(counters.begin(), 4, 0u);  // the extremes: zeros, all ones
  std::fill_n(keys.begin(), 2, 0u);
  std::fill_n(counters.begin() + 4, 4, ~0u);
  std::fill_n(keys.begin() + 2, 2, ~0u);
  const cl_command_queue q = device.queue();
  DeviceBuffer<uint32_t> dc(device, counters.size()), dk(device, keys.size()), dw(device, counters.size());
  DeviceBuffer<float> du(device, counters.size());
  dc.write(q, counters);
  dk.write(q, keys);
  ClKernel kernel = device.kernel("philox_words.cl", "philox_words", {});
  set_args(kernel, dc, dk, n, dw, du);
  launch<1>(q, kernel, {static_cast<size_t>((n + 63) / 64 * 64)}, {64}, {}, EventMode::kNone);
  const std::vector<uint32_t> words = dw.read_all(q);
  const std::vector<float> uniforms = du.read_all(q);
  for (int g = 0; g < n; ++g) {
    const auto at = static_cast<size_t>(g);
    const random::PhiloxCounter expected =
        random::philox4x32_10({counters[4 * at], counters[4 * at + 1], counters[4 * at + 2], counters[4 * at + 3]},
                              {keys[2 * at], keys[2 * at + 1]});
    for (size_t w = 0; w < 4; ++w) {
      ASSERT_EQ(words[4 * at + w], expected[w]) << "work-item " << g << " word " << w;
      ASSERT_EQ(uniforms[4 * at + w], random::uniform_float(expected[w])) << "work-item " << g << " word " << w;
    }
  }
}

}  // namespace
}  // namespace rtf
