// Cache-key hashing: stable, length-delimited, sensitive to every byte.
// ctest-label: unit
#include <gtest/gtest.h>

#include "core/util/hash.hpp"

namespace rtf {
namespace {

TEST(Hash, StableAndDelimited) {
  EXPECT_EQ(hash_hex({"abc"}), hash_hex({"abc"}));
  EXPECT_EQ(hash_hex({"abc"}).size(), 32u);
  EXPECT_NE(hash_hex({"ab", "c"}), hash_hex({"a", "bc"}));
  EXPECT_NE(hash_hex({"abc"}), hash_hex({"abd"}));
  EXPECT_NE(hash_hex({""}), hash_hex({}));
}

}  // namespace
}  // namespace rtf
