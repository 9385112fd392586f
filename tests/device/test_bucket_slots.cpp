// ctest-label: unit
// bucket_slots (a stable counting sort's placement over host threads): scattering fresh random items by the slots it
// gives equals a serial stable bucket sort, for 1, 3 and 8 workers, items landing in one or two buckets, empty
// buckets, fewer items than workers; a refused item is reported as the first refused in the items' order.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/util/bucket_slots.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

// Items (a, b): item k lands in bucket a, and also in b when b >= 0.
void expect_stable_bucket_sort(const std::vector<std::pair<int, int>>& items, size_t buckets, size_t workers) {
  SCOPED_TRACE(::testing::Message() << items.size() << " items, " << buckets << " buckets, " << workers << " workers");
  std::vector<std::vector<size_t>> expected(buckets);
  for (size_t k = 0; k < items.size(); ++k) {
    expected[static_cast<size_t>(items[k].first)].push_back(k);
    if (items[k].second >= 0) expected[static_cast<size_t>(items[k].second)].push_back(k);
  }
  const auto land_all = [&](size_t k, auto&& land) {
    land(static_cast<size_t>(items[k].first));
    if (items[k].second >= 0) land(static_cast<size_t>(items[k].second));
    return true;
  };
  BucketSlots s = bucket_slots(items.size(), buckets, workers, land_all);
  ASSERT_EQ(s.bad, items.size());
  ASSERT_EQ(s.start.size(), buckets + 1);
  std::vector<size_t> placed(static_cast<size_t>(s.start.back()), items.size());
  host_ranges(items.size(), workers, [&](size_t begin, size_t end, size_t w) {
    for (size_t k = begin; k < end; ++k) {
      land_all(k, [&](size_t b) { placed[static_cast<size_t>(s.next[w][b]++)] = k; });
    }
  });
  for (size_t b = 0; b < buckets; ++b) {
    const std::vector<size_t> got(placed.begin() + s.start[b], placed.begin() + s.start[b + 1]);
    EXPECT_EQ(got, expected[b]) << "bucket " << b;
  }
}

TEST(BucketSlots, EqualsASerialStableBucketSort) {
  std::mt19937 rng(test::test_seed());
  for (size_t workers : {size_t{1}, size_t{3}, size_t{8}}) {
    for (size_t n : {size_t{0}, size_t{2}, size_t{5000}}) {
      std::vector<std::pair<int, int>> items(n);
      for (auto& [a, b] : items) {
        a = static_cast<int>(rng() % 37);
        b = rng() % 2 == 0 ? -1 : static_cast<int>(rng() % 37);  // some items in two buckets
      }
      expect_stable_bucket_sort(items, 40, workers);  // buckets 37..39 stay empty
    }
  }
}

TEST(BucketSlots, FirstRefusedItem) {
  for (size_t workers : {size_t{1}, size_t{4}}) {
    const BucketSlots s = bucket_slots(1000, 3, workers, [](size_t k, auto&& land) {
      if (k == 611 || k == 907) return false;
      land(k % 3);
      return true;
    });
    EXPECT_EQ(s.bad, 611u) << workers << " workers";
  }
}

}  // namespace
}  // namespace rtf
