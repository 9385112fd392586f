// Cache-key hashing: stable, length-delimited, sensitive to every byte (in every block of a part hashed in
// parallel), and the same for any number of threads.
// ctest-label: unit
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "core/util/hash.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

TEST(Hash, StableAndDelimited) {
  EXPECT_EQ(hash_hex({"abc"}), hash_hex({"abc"}));
  EXPECT_EQ(hash_hex({"abc"}).size(), 32u);
  EXPECT_NE(hash_hex({"ab", "c"}), hash_hex({"a", "bc"}));
  EXPECT_NE(hash_hex({"abc"}), hash_hex({"abd"}));
  EXPECT_NE(hash_hex({""}), hash_hex({}));
  // Trailing zero bytes and every length up to two words differ.
  EXPECT_NE(hash_hex({std::string("a\0", 2)}), hash_hex({"a"}));
  std::string zeros;
  std::string previous = hash_hex({zeros});
  for (int n = 1; n <= 17; ++n) {
    zeros.push_back('\0');
    const std::string now = hash_hex({zeros});
    EXPECT_NE(now, previous) << n;
    previous = now;
  }
}

TEST(Hash, LargePartEveryByteCountsAndThreadsDoNot) {
  // 41 MiB + 3 bytes: above the parallel size, a partial last block.
  std::mt19937_64 rng(test::test_seed());
  std::string big((41u << 20) + 3, '\0');
  for (char& c : big) c = static_cast<char>(rng() & 0xFF);
  const std::string base = hash_hex({"x", big});
  EXPECT_EQ(base, hash_hex({"x", big}, 1));
  EXPECT_EQ(base, hash_hex({"x", big}, 3));
  EXPECT_EQ(base, hash_hex({"x", big}, 7));
  for (size_t at : {size_t{0}, size_t{4} << 20, (size_t{17} << 20) + 5, big.size() - 1}) {
    big[at] = static_cast<char>(big[at] ^ 1);
    EXPECT_NE(hash_hex({"x", big}), base) << at;
    big[at] = static_cast<char>(big[at] ^ 1);
  }
  EXPECT_EQ(hash_hex({"x", big}), base);
  EXPECT_NE(hash_hex({"x", std::string_view(big).substr(0, big.size() - 1)}), base);
}

}  // namespace
}  // namespace rtf
