// The carpet's voxels: carpet_voxels picks exactly `rows` of the mask (all of them when it has fewer), distinct, in the
// mask, preferred ones first with the split after them, in proportion. (Their gathered column: test_volume_pass.)
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/qa/carpet_column.hpp"

namespace rtf {
namespace {

TEST(CarpetVoxels, TakesRowsOfTheMaskEvenlyPreferredFirst) {
  std::mt19937_64 rng(std::random_device{}());
  std::bernoulli_distribution in(0.4), grey(0.3);
  std::vector<uint8_t> mask(17 * 13 * 7), preferred(mask.size());
  for (size_t v = 0; v < mask.size(); ++v) {
    mask[v] = in(rng) ? 1 : 0;
    preferred[v] = grey(rng) ? 1 : 0;
  }
  const auto inside = std::count(mask.begin(), mask.end(), uint8_t{1});
  for (const int64_t rows : {int64_t{1}, int64_t{37}, int64_t{200}, inside, inside + 50}) {
    const CarpetVoxels c = carpet_voxels(mask, rows, preferred);
    ASSERT_EQ(static_cast<int64_t>(c.indices.size()), std::min(rows, inside)) << rows;
    const std::set<int> distinct(c.indices.begin(), c.indices.end());
    EXPECT_EQ(distinct.size(), c.indices.size());
    for (size_t i = 0; i < c.indices.size(); ++i) {
      const auto v = static_cast<size_t>(c.indices[i]);
      EXPECT_EQ(mask[v], 1);
      EXPECT_EQ(preferred[v] != 0, static_cast<int64_t>(i) < c.split) << "row " << i << " of " << rows;
    }
    if (rows >= 37) {
      EXPECT_GT(c.split, 0);
    }
  }
  const CarpetVoxels none = carpet_voxels(mask, 50);
  EXPECT_EQ(none.split, 0);
  EXPECT_EQ(none.indices.size(), 50u);
  EXPECT_TRUE(std::is_sorted(none.indices.begin(), none.indices.end()));
  EXPECT_TRUE(carpet_voxels(std::vector<uint8_t>(10, 0), 5).indices.empty());
  EXPECT_THROW(carpet_voxels(mask, 5, std::vector<uint8_t>(3, 1)), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
