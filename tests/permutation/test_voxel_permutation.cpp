// ctest-label: gpu
// The voxel-wise permutation test: permutation sets (exhaustive enumeration, blocks, seeds) and the device against the
// double-precision reference, which builds the Freedman-Lane data and refits the model for every rearrangement.
// Exact case: 8 subjects, all 2^8 sign flips: every uncorrected and corrected p value equals the reference's. General
// design: two groups and a covariate, 11 subjects, 300 seeded permutations. Fresh random data each run (seed printed;
// RTF_TEST_SEED replays it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>
#include <string>

#include "core/permutation/permutation_set.hpp"
#include "core/permutation/t_contrast_model.hpp"
#include "core/permutation/voxel_permutation.hpp"
#include "core/reference/permutation_reference.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

using test::test_seed;

// N x V data: noise plus `effect` times a per-voxel amplitude on subjects where `regressor` is non-zero.
std::vector<float> random_data(int n, size_t voxels, uint32_t seed, const Eigen::VectorXd& regressor) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::uniform_real_distribution<float> amplitude(0.0f, 1.5f);
  std::vector<float> data(static_cast<size_t>(n) * voxels);
  for (size_t v = 0; v < voxels; ++v) {
    const float a = v % 7 == 0 ? amplitude(rng) : 0.0f;  // an effect in one voxel of seven
    for (int i = 0; i < n; ++i) {
      data[static_cast<size_t>(i) * voxels + v] = 3.0f + noise(rng) + a * static_cast<float>(regressor[i]);
    }
  }
  return data;
}

TEST(PermutationSet, EnumeratesEverySignFlipOnceIdentityFirst) {
  const PermutationSet set = make_permutation_set(PermutationKind::kSignFlip, 8, 5000, 1);
  ASSERT_TRUE(set.exhaustive);
  ASSERT_EQ(set.count, 256);
  std::set<std::vector<int8_t>> seen;
  for (int k = 0; k < set.count; ++k) {
    seen.emplace(set.signs.begin() + k * 8, set.signs.begin() + (k + 1) * 8);
  }
  EXPECT_EQ(seen.size(), 256U);
  EXPECT_TRUE(std::all_of(set.signs.begin(), set.signs.begin() + 8, [](int8_t s) { return s == 1; }));
}

TEST(PermutationSet, TwoGroupsHaveBinomialManyDistinctRelabellings) {
  Eigen::MatrixXd design(8, 2);
  design << 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1, 0, 1;
  const PermutationSet set = make_permutation_set(PermutationKind::kPermute, 8, 100, 3, {}, &design);
  ASSERT_TRUE(set.exhaustive);
  ASSERT_EQ(set.count, 70);                    // 8 choose 4
  std::set<std::vector<int>> group_of_source;  // which group each subject's residual lands in
  for (int k = 0; k < set.count; ++k) {
    std::vector<int> g(8);
    for (int i = 0; i < 8; ++i)
      g[static_cast<size_t>(set.order[static_cast<size_t>(k * 8 + i)])] = design(i, 1) > 0 ? 1 : 0;
    group_of_source.insert(g);
    std::vector<int32_t> sorted(set.order.begin() + k * 8, set.order.begin() + (k + 1) * 8);
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < 8; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);  // a permutation
  }
  EXPECT_EQ(group_of_source.size(), 70U);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(set.order[static_cast<size_t>(i)], i);  // identity first
  // Fewer requested than exist: random, reproducible by seed.
  const PermutationSet a = make_permutation_set(PermutationKind::kPermute, 8, 20, 7, {}, &design);
  const PermutationSet b = make_permutation_set(PermutationKind::kPermute, 8, 20, 7, {}, &design);
  const PermutationSet c = make_permutation_set(PermutationKind::kPermute, 8, 20, 8, {}, &design);
  EXPECT_FALSE(a.exhaustive);
  EXPECT_EQ(a.order, b.order);
  EXPECT_NE(a.order, c.order);
}

TEST(PermutationSet, PermutesOnlyWithinBlocks) {
  const std::vector<int> blocks{1, 1, 1, 2, 2, 2, 2, 3, 3};
  const PermutationSet set = make_permutation_set(PermutationKind::kPermute, 9, 200, 11, blocks);
  EXPECT_FALSE(set.exhaustive);  // 3! 4! 2! = 288 > 200
  for (int k = 0; k < set.count; ++k) {
    for (int i = 0; i < 9; ++i) {
      EXPECT_EQ(blocks[static_cast<size_t>(set.order[static_cast<size_t>(k * 9 + i)])], blocks[static_cast<size_t>(i)]);
    }
  }
  const PermutationSet all = make_permutation_set(PermutationKind::kPermute, 9, 288, 11, blocks);
  EXPECT_TRUE(all.exhaustive);
  std::set<std::vector<int32_t>> distinct;
  for (int k = 0; k < all.count; ++k) distinct.emplace(all.order.begin() + k * 9, all.order.begin() + (k + 1) * 9);
  EXPECT_EQ(distinct.size(), 288U);
  EXPECT_THROW(make_permutation_set(PermutationKind::kSignFlip, 9, 10, 1, blocks), std::invalid_argument);
  EXPECT_THROW(make_permutation_set(PermutationKind::kPermute, 9, 10, 1, {1, 2}), std::invalid_argument);
}

TEST(VoxelPermutation, AllSignFlipsOfEightSubjectsGiveTheReferencePValuesExactly) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const int n = 8;
  const size_t voxels = 1237;
  const Eigen::MatrixXd design = Eigen::MatrixXd::Ones(n, 1);
  const Eigen::RowVectorXd contrast = Eigen::RowVectorXd::Ones(1);
  std::vector<float> data = random_data(n, voxels, seed, Eigen::VectorXd::Ones(n));
  for (float& x : data) x -= 3.0f;  // one-sample: the mean is the effect
  const TContrastModel model = make_t_contrast_model(design, contrast);
  const PermutationSet set = make_permutation_set(PermutationKind::kSignFlip, n, 10000, seed);
  ASSERT_EQ(set.count, 256);
  std::vector<float> residuals = data;
  remove_nuisance(model, residuals, voxels);
  const VoxelPermutationResult dev = voxel_permutation_test(test::test_device(), model, set, residuals, voxels);
  const VoxelPermutationResult ref = reference::voxel_permutation_test(design, contrast, set, data, voxels);
  for (size_t v = 0; v < voxels; ++v) {
    ASSERT_NEAR(dev.t[v], ref.t[v], 1e-5 * std::max(1.0f, std::abs(ref.t[v]))) << v;
  }
  EXPECT_EQ(dev.exceed, ref.exceed);
  EXPECT_EQ(dev.uncorrected_p(), ref.uncorrected_p());
  EXPECT_EQ(dev.corrected_p(), ref.corrected_p());
  for (size_t k = 0; k < dev.max_null.size(); ++k) {
    EXPECT_NEAR(dev.max_null[k], ref.max_null[k], 1e-5 * std::abs(ref.max_null[k])) << k;
  }
  // The p values mean something: none below 1/256 (the identity always counts), uniform on the null voxels (mean
  // 0.5 + 1/512; 1060 voxels: standard error 0.009), small where the effect is.
  const auto corrected = dev.corrected_p();
  const auto uncorrected = dev.uncorrected_p();
  EXPECT_GE(*std::min_element(corrected.begin(), corrected.end()), 1.0 / 256.0);
  EXPECT_GE(*std::min_element(uncorrected.begin(), uncorrected.end()), 1.0 / 256.0);
  double null_sum = 0.0;
  size_t null_count = 0;
  for (size_t v = 0; v < voxels; ++v) {
    if (v % 7 != 0) {
      null_sum += uncorrected[v];
      ++null_count;
    }
  }
  EXPECT_NEAR(null_sum / static_cast<double>(null_count), 0.5 + 1.0 / 512.0, 0.045);
}

TEST(VoxelPermutation, FreedmanLaneWithACovariateMatchesTheReference) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const int n = 11;
  const size_t voxels = 613;
  Eigen::MatrixXd design(n, 3);
  std::mt19937 rng(seed + 5);
  std::normal_distribution<double> age(0.0, 1.0);
  for (int i = 0; i < n; ++i) {
    design(i, 0) = i < 6 ? 1.0 : 0.0;
    design(i, 1) = i < 6 ? 0.0 : 1.0;
    design(i, 2) = age(rng);
  }
  Eigen::RowVectorXd contrast(3);
  contrast << 1.0, -1.0, 0.0;
  std::vector<float> data = random_data(n, voxels, seed, design.col(0));
  // A nuisance effect of the covariate everywhere (what Freedman-Lane must remove before permuting).
  for (size_t v = 0; v < voxels; ++v) {
    for (int i = 0; i < n; ++i) data[static_cast<size_t>(i) * voxels + v] += 0.8f * static_cast<float>(design(i, 2));
  }
  const TContrastModel model = make_t_contrast_model(design, contrast);
  EXPECT_EQ(model.nuisance_rank, 2);
  const PermutationSet set = make_permutation_set(PermutationKind::kPermute, n, 300, seed, {}, &design);
  ASSERT_FALSE(set.exhaustive);
  std::vector<float> residuals = data;
  remove_nuisance(model, residuals, voxels);
  const VoxelPermutationResult dev = voxel_permutation_test(test::test_device(), model, set, residuals, voxels);
  const VoxelPermutationResult ref = reference::voxel_permutation_test(design, contrast, set, data, voxels);
  // Tolerance: the device permutes float residuals formed on the host (rounding ~1e-7 relative), the reference forms
  // them in double: a rearrangement's t within ~1e-6 of a voxel's count boundary may fall on the other side. Counts may
  // differ by one at no more than 1% of the voxels; the statistics within 1e-4.
  size_t off = 0;
  for (size_t v = 0; v < voxels; ++v) {
    ASSERT_NEAR(dev.t[v], ref.t[v], 1e-4 * std::max(1.0f, std::abs(ref.t[v]))) << v;
    const auto diff = static_cast<int64_t>(dev.exceed[v]) - static_cast<int64_t>(ref.exceed[v]);
    ASSERT_LE(std::abs(diff), 1) << v;
    off += diff != 0 ? 1 : 0;
  }
  EXPECT_LE(off, voxels / 100);
  for (size_t k = 0; k < dev.max_null.size(); ++k) {
    EXPECT_NEAR(dev.max_null[k], ref.max_null[k], 1e-4 * std::abs(ref.max_null[k])) << k;
  }
}

TEST(VoxelPermutation, FTestOfThreeGroupsWithACovariateMatchesTheReference) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const int n = 13;
  const size_t voxels = 419;
  Eigen::MatrixXd design = Eigen::MatrixXd::Zero(n, 4);
  std::mt19937 rng(seed + 9);
  std::normal_distribution<double> age(0.0, 1.0);
  for (int i = 0; i < n; ++i) {
    design(i, i % 3) = 1.0;
    design(i, 3) = age(rng);
  }
  Eigen::MatrixXd rows(2, 4);  // any difference between the three groups
  rows << 1, -1, 0, 0, 0, 1, -1, 0;
  std::vector<float> data = random_data(n, voxels, seed, design.col(1));
  const TContrastModel model = make_f_contrast_model(design, rows);
  EXPECT_EQ(model.q, 2);
  EXPECT_EQ(model.nuisance_rank, 2);  // the mean and the covariate
  const PermutationSet set = make_permutation_set(PermutationKind::kPermute, n, 250, seed, {}, &design);
  std::vector<float> residuals = data;
  remove_nuisance(model, residuals, voxels);
  const VoxelPermutationResult dev = voxel_permutation_test(test::test_device(), model, set, residuals, voxels);
  const VoxelPermutationResult ref = reference::voxel_permutation_test_f(design, rows, set, data, voxels);
  // Tolerance as for the t test with a covariate (float residuals formed on the host).
  size_t off = 0;
  for (size_t v = 0; v < voxels; ++v) {
    ASSERT_NEAR(dev.t[v], ref.t[v], 1e-4 * std::max(1.0f, std::abs(ref.t[v]))) << v;
    ASSERT_GE(dev.t[v], 0.0f);
    const auto diff = static_cast<int64_t>(dev.exceed[v]) - static_cast<int64_t>(ref.exceed[v]);
    ASSERT_LE(std::abs(diff), 1) << v;
    off += diff != 0 ? 1 : 0;
  }
  EXPECT_LE(off, voxels / 100);
  for (size_t k = 0; k < dev.max_null.size(); ++k) {
    EXPECT_NEAR(dev.max_null[k], ref.max_null[k], 1e-4 * std::abs(ref.max_null[k])) << k;
  }
  EXPECT_THROW(make_f_contrast_model(design, Eigen::MatrixXd::Ones(2, 4)), std::invalid_argument);  // dependent rows
}

TEST(VoxelPermutation, RefusesDesignsItCannotTest) {
  Eigen::MatrixXd collinear(6, 3);
  collinear << 1, 0, 1, 1, 0, 1, 1, 0, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0;  // column 3 = column 1
  EXPECT_THROW(make_t_contrast_model(collinear, Eigen::RowVectorXd::Ones(3)), std::invalid_argument);
  const Eigen::MatrixXd ok = Eigen::MatrixXd::Ones(6, 1);
  EXPECT_THROW(make_t_contrast_model(ok, Eigen::RowVectorXd::Ones(2)), std::invalid_argument);  // wrong length
  EXPECT_THROW(make_t_contrast_model(ok, Eigen::RowVectorXd::Zero(1)), std::invalid_argument);  // zero contrast
  EXPECT_THROW(make_t_contrast_model(Eigen::MatrixXd::Ones(1, 1), Eigen::RowVectorXd::Ones(1)), std::invalid_argument);
  Eigen::MatrixXd zero_column = Eigen::MatrixXd::Ones(6, 2);
  zero_column.col(1).setZero();
  EXPECT_THROW(make_t_contrast_model(zero_column, Eigen::RowVectorXd::Ones(2)), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
