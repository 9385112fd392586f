// ctest-label: gpu
// DeviceQualityIndex (AFNI 3dTqual: 1 - Spearman's rho with the median volume) against the double reference
// (reference::quality_index: sorting, average ranks, Pearson in double) on odd grids with int16-like values (many ties)
// and fresh random masks, within 1e-12 (both are exact up to the final division); scipy.stats.spearmanr's value on a
// small list with ties within 1e-12; every volume of a run at once (in batches of 2 or 3 rows and in one) the same; the
// device's median volume equals the voxel-wise median within a float rounding;
// values of both signs with both zeros (tied) over several sorted tiles (runs merged 8, 2 and 3 at a time), within
// 1e-12 of the reference;
// a volume ranked as the reference gives 0, one ranked in reverse 2, a constant one 1 (AFNI's); non-finite inputs,
// a constant reference and too small a mask NaN.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/qa/outlier_count.hpp"
#include "core/qa/quality_index.hpp"
#include "core/reference/qa_reference.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

DeviceBuffer<float> upload(Device& device, const std::vector<float>& values) {
  DeviceBuffer<float> buffer(device, values.size());
  buffer.write(device.queue(), values);
  return buffer;
}

TEST(QualityIndex, MatchesScipyOnAListWithTies) {
  Device& device = test::test_device();
  const std::vector<float> x{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5}, y{2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4};
  DeviceQualityIndex q(device, std::vector<uint8_t>(x.size(), 1));
  q.set_reference(upload(device, y));
  // 1 - scipy.stats.spearmanr(x, y).correlation, scipy 1.10.1.
  EXPECT_NEAR(q.quality(upload(device, x)), 0.8615432348532305, 1e-12);
  EXPECT_NEAR(q.quality(upload(device, y)), 0.0, 1e-12) << "the reference itself";
  std::vector<float> reversed(y.size());
  for (size_t i = 0; i < y.size(); ++i) reversed[i] = -y[i];
  EXPECT_NEAR(q.quality(upload(device, reversed)), 2.0, 1e-12) << "ranked in reverse";
}

TEST(QualityIndex, MatchesTheReferenceAgainstTheMedianVolume) {
  Device& device = test::test_device();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const size_t voxels : {size_t{2}, size_t{37 * 29 * 11}}) {
    const int n = 9;
    std::normal_distribution<float> base(800.0f, 150.0f), noise(0.0f, 15.0f);
    std::vector<float> mean(voxels);
    for (float& m : mean) m = std::round(base(rng));
    std::vector<std::vector<float>> volumes(n, std::vector<float>(voxels));
    std::vector<float> flat;
    for (auto& volume : volumes) {
      for (size_t v = 0; v < voxels; ++v) volume[v] = std::round(mean[v] + noise(rng));
      flat.insert(flat.end(), volume.begin(), volume.end());
    }
    std::vector<uint8_t> mask(voxels);
    std::bernoulli_distribution inside(0.7);
    for (auto& m : mask) m = inside(rng) ? 1 : 0;
    mask[0] = mask[1] = 1;
    const DeviceBuffer<float> series = upload(device, flat);
    DeviceOutlierCount outliers(device, mask, n);
    DeviceBuffer<float> median(device, voxels);
    median.fill(device.queue(), 0.0f);
    outliers.medians(series, n, median);
    std::vector<float> median_host = median.read_all(device.queue());
    {
      DeviceOutlierCount scratch_rows(device, mask, n, int64_t{256} << 20, false);
      DeviceBuffer<float> other(device, voxels);
      other.fill(device.queue(), 0.0f);
      scratch_rows.medians(series, n, other);
      EXPECT_EQ(other.read_all(device.queue()), median_host) << "local rows and scratch rows: the same medians";
    }
    for (size_t v = 0; v < voxels; ++v) {
      if (mask[v] == 0) continue;
      std::vector<float> s;
      for (const auto& volume : volumes) s.push_back(volume[v]);
      std::nth_element(s.begin(), s.begin() + n / 2, s.end());
      ASSERT_EQ(median_host[v], s[n / 2]) << "voxel " << v << ": an odd series' median is one of its values";
    }
    DeviceQualityIndex q(device, mask);
    q.set_reference(median);
    // Every volume at once, in batches of 2 or 3 rows (a small memory budget) and of all 9.
    const int64_t masked = std::max<int64_t>(q.mask_voxels(), 1);
    const int64_t two_rows = 2 * (8 * masked + 8 * 1024 * ((masked + 1023) / 1024) + 8 * 3 * 64);
    DeviceQualityIndex batched(device, mask, two_rows);
    batched.set_reference(median);
    const std::vector<double> every = batched.quality_every_volume(series, n);
    const std::vector<double> every_at_once = q.quality_every_volume(series, n);
    ASSERT_EQ(every.size(), static_cast<size_t>(n));
    for (size_t t = 0; t < volumes.size(); ++t) {
      const double want = reference::quality_index(volumes[t], median_host, mask);
      EXPECT_NEAR(q.quality(upload(device, volumes[t])), want, 1e-12) << voxels << " voxels, volume " << t;
      EXPECT_EQ(every[t], every_at_once[t]) << "small batches, volume " << t;
      EXPECT_EQ(q.quality_of_slot(series, static_cast<int>(t)), every_at_once[t]) << "one slot, volume " << t;
      EXPECT_NEAR(every[t], want, 1e-12) << voxels << " voxels, volume " << t;
    }
  }
}

TEST(QualityIndex, MixedSignsZerosAndTiesOverManyTiles) {
  // Values of both signs, both zeros (which tie) and many ties, over a mask spanning several sorted tiles and a last
  // partial one; the reference is random too.
  Device& device = test::test_device();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> z(0.0f, 50.0f);
  std::uniform_int_distribution<int> kind(0, 5);
  const auto draw = [&] {
    const int k = kind(rng);
    return k == 0 ? 0.0f : k == 1 ? -0.0f : k == 2 ? std::round(z(rng) / 8.0f) : z(rng);
  };
  for (const size_t voxels : {size_t{3}, size_t{1025}, size_t{2049}, size_t{9001}}) {
    std::vector<float> volume(voxels), reference(voxels);
    for (size_t v = 0; v < voxels; ++v) {
      volume[v] = draw();
      reference[v] = draw();
    }
    std::vector<uint8_t> mask(voxels, 1);
    mask[voxels / 2] = 0;
    const double want = reference::quality_index(volume, reference, mask);
    for (const int ways : {8, 2, 3}) {  // 9001 voxels: 9 tiles, two passes of 8 (the second group one run short)
      DeviceQualityIndex q(device, mask, int64_t{512} << 20, ways);
      q.set_reference(upload(device, reference));
      const double got = q.quality(upload(device, volume)), itself = q.quality(upload(device, reference));
      if (std::isnan(want)) {  // 2 voxels whose reference values tie (e.g. 0 and -0): undefined for both
        EXPECT_TRUE(std::isnan(got)) << voxels << " voxels, " << ways << " ways";
        EXPECT_TRUE(std::isnan(itself)) << voxels << " voxels, " << ways << " ways";
        continue;
      }
      EXPECT_NEAR(got, want, 1e-12) << voxels << " voxels, " << ways << " ways";
      EXPECT_NEAR(itself, 0.0, 1e-12) << voxels << " voxels, " << ways << " ways: the reference itself";
    }
  }
}

TEST(QualityIndex, UndefinedCasesAndBadUse) {
  Device& device = test::test_device();
  const size_t n = 6;
  DeviceQualityIndex q(device, std::vector<uint8_t>(n, 1));
  EXPECT_THROW((void)q.quality(upload(device, std::vector<float>(n, 1.0f))), std::logic_error);
  q.set_reference(upload(device, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(q.quality(upload(device, std::vector<float>(n, 7.0f))), 1.0) << "a constant volume: 3dTqual's 1";
  DeviceQualityIndex flat(device, std::vector<uint8_t>(n, 1));
  flat.set_reference(upload(device, std::vector<float>(n, 2.0f)));
  EXPECT_TRUE(std::isnan(flat.quality(upload(device, {1, 2, 3, 4, 5, 6})))) << "a constant reference";
  EXPECT_TRUE(std::isnan(q.quality(upload(device, {1, 2, std::nanf(""), 4, 5, 6})))) << "a NaN in the mask";
  EXPECT_THROW((void)q.quality(upload(device, {1, 2, 3})), std::invalid_argument);
  DeviceQualityIndex one(device, std::vector<uint8_t>{0, 1, 0});
  one.set_reference(upload(device, {1, 2, 3}));
  EXPECT_TRUE(std::isnan(one.quality(upload(device, {3, 2, 1})))) << "one voxel has no ranking";
  EXPECT_THROW(DeviceQualityIndex(device, std::vector<uint8_t>{}), std::invalid_argument);
  EXPECT_THROW(DeviceQualityIndex(device, std::vector<uint8_t>(4, 1), int64_t{1} << 20, 1), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
