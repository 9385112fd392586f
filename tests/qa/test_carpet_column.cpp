// ctest-label: gpu
// The carpet's voxels and their gathered column: carpet_voxels picks exactly `rows` of the mask (all of them when it
// has fewer), distinct, in the mask, preferred ones first with the split after them, in proportion; the device column
// equals plain indexing of the volume bit for bit (a copy: tolerance 0) on odd sizes and fresh random data; voxels
// outside the volume and short volumes are refused.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/qa/carpet_column.hpp"
#include "tests/support/test_device.hpp"

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

TEST(CarpetColumn, GathersTheChosenVoxelsExactly) {
  Device& device = test::test_device();
  std::mt19937_64 rng(std::random_device{}());
  std::normal_distribution<float> value(800.0f, 120.0f);
  for (const int64_t voxels : {int64_t{1}, int64_t{131}, int64_t{19 * 23 * 17}}) {
    std::uniform_int_distribution<int> pick(0, static_cast<int>(voxels) - 1);
    std::vector<int> indices(static_cast<size_t>(std::min<int64_t>(voxels, 301)));
    for (int& i : indices) i = pick(rng);
    DeviceCarpetColumn carpet(device, voxels, indices);
    ASSERT_EQ(carpet.rows(), static_cast<int64_t>(indices.size()));
    std::vector<float> volume(static_cast<size_t>(voxels));
    DeviceBuffer<float> on_device(device, volume.size());
    for (int t = 0; t < 3; ++t) {
      for (float& x : volume) x = value(rng);
      on_device.write(device.queue(), std::span<const float>(volume));
      const std::vector<float> got = carpet.column(on_device);
      ASSERT_EQ(got.size(), indices.size());
      for (size_t i = 0; i < indices.size(); ++i) EXPECT_EQ(got[i], volume[static_cast<size_t>(indices[i])]);
    }
  }
  EXPECT_THROW(DeviceCarpetColumn(device, 10, {3, 10}), std::invalid_argument);
  DeviceCarpetColumn small(device, 100, {1, 2});
  DeviceBuffer<float> short_volume(device, 50);
  EXPECT_THROW(small.column(short_volume), std::invalid_argument);
  DeviceCarpetColumn empty(device, 100, {});
  DeviceBuffer<float> volume(device, 100);
  EXPECT_TRUE(empty.column(volume).empty());
}

}  // namespace
}  // namespace rtf
