// SliceZScores on slice means of a known answer: a slice halved at one volume (a drop-out) and one doubled at another
// (a spike) are flagged there, with z of the right sign, and nothing else is (noise of SD 1 around 1000, the default
// options, a fixed seed for the no-false-alarm count: 33 slices x 120 volumes); each z equals (m - median) / (1.4826
// MAD, floored at half the slices' median relative spread) of the slice's previous `history` values, computed here
// directly; NaN before min_history volumes and for an
// empty slice;
// bad options refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/qa/slice_zscores.hpp"

namespace rtf {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

TEST(SliceZScores, DropOutAndSpikeFlaggedWhereTheyAreAndNowhereElse) {
  std::mt19937_64 rng(20261127);  // fixed: the no-false-alarm count below is for this noise
  std::normal_distribution<double> noise(0.0, 1.0);
  const int slices = 33, volumes = 120;
  std::vector<std::vector<double>> means(volumes, std::vector<double>(slices));
  for (auto& volume : means) {
    for (int z = 0; z < slices; ++z) volume[static_cast<size_t>(z)] = 1000.0 + 10.0 * z + noise(rng);
  }
  means[40][7] *= 0.5;   // a drop-out
  means[77][20] *= 2.0;  // a spike
  SliceZScores scores;   // the defaults: history 60, min_history 10, threshold 8
  int flags = 0;
  for (int t = 0; t < volumes; ++t) {
    const SliceZ got = scores.next(means[static_cast<size_t>(t)]);
    flags += static_cast<int>(got.flagged.size());
    if (t < 10) {
      EXPECT_TRUE(std::all_of(got.z.begin(), got.z.end(), [](double z) { return std::isnan(z); })) << t;
      EXPECT_EQ(got.worst_slice, -1);
      continue;
    }
    // Each z from its definition, over the slice's previous min(t, 60) values: (m - median) / spread, spread = 1.4826
    // MAD, no lower than half the median over the slices of spread / median.
    std::vector<double> med(slices), spread(slices), relative;
    for (int z = 0; z < slices; ++z) {
      std::vector<double> history;
      for (int s = std::max(0, t - 60); s < t; ++s) {
        history.push_back(means[static_cast<size_t>(s)][static_cast<size_t>(z)]);
      }
      med[static_cast<size_t>(z)] = median(history);
      std::vector<double> dev;
      for (const double x : history) dev.push_back(std::abs(x - med[static_cast<size_t>(z)]));
      spread[static_cast<size_t>(z)] = 1.4826 * median(dev);
      relative.push_back(spread[static_cast<size_t>(z)] / med[static_cast<size_t>(z)]);
    }
    const double floor = 0.5 * median(relative);
    for (size_t z = 0; z < static_cast<size_t>(slices); ++z) {
      const double want = (means[static_cast<size_t>(t)][z] - med[z]) / std::max(spread[z], floor * med[z]);
      ASSERT_NEAR(got.z[z], want, 1e-9 * std::max(1.0, std::abs(want))) << t << " " << z;
    }
    if (t == 40) {
      EXPECT_EQ(got.flagged, std::vector<int>{7});
      EXPECT_EQ(got.worst_slice, 7);
      EXPECT_LT(got.worst_z, -100) << "a drop-out is far below";
    } else if (t == 77) {
      EXPECT_EQ(got.flagged, std::vector<int>{20});
      EXPECT_GT(got.worst_z, 100) << "a spike is far above";
    } else {
      EXPECT_TRUE(got.flagged.empty()) << "volume " << t << " slice " << got.worst_slice << " z " << got.worst_z;
    }
  }
  EXPECT_EQ(flags, 2);
}

TEST(SliceZScores, EmptySlicesConstantHistoryAndBadOptions) {
  SliceZScores scores({.history = 4, .min_history = 2, .threshold = 3.0});
  const double nan = std::nan("");
  (void)scores.next({5, nan});
  (void)scores.next({5, nan});
  const SliceZ got = scores.next({6, nan});
  EXPECT_TRUE(std::isinf(got.z[0]) && got.z[0] > 0) << "a change after a constant history";
  EXPECT_TRUE(std::isnan(got.z[1])) << "an empty slice";
  EXPECT_EQ(got.flagged, std::vector<int>{0});
  EXPECT_THROW(SliceZScores({.history = 1, .min_history = 1, .threshold = 5}), std::invalid_argument);
  EXPECT_THROW(SliceZScores({.history = 10, .min_history = 11, .threshold = 5}), std::invalid_argument);
  EXPECT_THROW(SliceZScores({.history = 10, .min_history = 5, .threshold = 0}), std::invalid_argument);
  EXPECT_THROW(SliceZScores({.history = 10, .min_history = 5, .threshold = std::nan("")}), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
