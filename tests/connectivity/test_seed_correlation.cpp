// Seed correlation maps: device (live ring path and offline series path) against the double-precision reference on
// odd grids with fresh random data, analytic cases (r = +-1, constant voxels), non-finite samples, a 2,000-volume
// cumulative run, real BOLD, and bad input. Every device test runs at each vector width of the map kernels (1 voxel
// per work-item, the GPU form; 2, 4, 8 and 16 lanes; the device's preferred width) on voxel counts that leave a partial
// last group, and the widths are also compared with one another.
// ctest-label: gpu
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/connectivity/fisher_z.hpp"
#include "core/connectivity/seed.hpp"
#include "core/connectivity/seed_correlation.hpp"
#include "core/io/nifti_io.hpp"
#include "core/reference/connectivity_reference.hpp"
#include "tests/connectivity/connectivity_fixtures.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();

// Sliding window (W = 23) and cumulative maps over the first 40 TRs: float sums of deviations from each voxel's first
// value; measured max |dr| ~2e-6, at the first TRs (2-10 volumes amplify rounding). Allow 1e-5. Fisher z is compared
// as |dz| (1 - r^2), an r-scale error, with the same bound.
constexpr double kSlidingTolerance = 1e-5;
constexpr double kCumulativeTolerance = 1e-5;
// Cumulative over 2,000 volumes with a 5% drift: compensated sums measured max |dr| 5e-7 - 9e-7 (13 runs); the same
// kernel with plain float sums measured 7e-6 - 2.4e-5, so this bound fails without the compensation. Allow 3e-6.
constexpr double kLongRunTolerance = 3e-6;

uint64_t fresh_seed() {
  return std::random_device{}();
}

void poison(SeedCorrelation& s) {
  for (const DeviceBuffer<float>* m : {&s.sliding_r(), &s.sliding_z(), &s.cumulative_r(), &s.cumulative_z()}) {
    if (m->size() > 0) const_cast<DeviceBuffer<float>*>(m)->fill(test::test_device().queue(), kNaNf);
  }
}

std::vector<double> reference_r(const Image& bold, std::span<const int32_t> seed, int64_t first, int64_t count) {
  return reference::seed_correlation_map(bold.data(), bold.header().voxels_per_volume(), first, count, seed);
}

// Checks r and z against the reference; returns the larger of the two errors (z as |dz| (1 - r^2)).
double expect_maps(SeedCorrelation& s, const std::vector<double>& r_ref, bool sliding, double tol,
                   const std::string& what) {
  const auto r = s.read(sliding ? s.sliding_r() : s.cumulative_r());
  const auto z = s.read(sliding ? s.sliding_z() : s.cumulative_z());
  const auto er = test::compare_maps(r, r_ref);
  EXPECT_EQ(er.mismatched_nan, 0) << what << ": " << test::describe(er);
  EXPECT_LT(er.max_abs, tol) << what << ": " << test::describe(er);
  const auto z_ref = reference::fisher_z(r_ref);
  const auto ez = test::compare_z(z, z_ref, r_ref);
  EXPECT_EQ(ez.mismatched_nan, 0) << what << " z: " << test::describe(ez);
  EXPECT_LT(ez.max_abs, tol) << what << " z: " << test::describe(ez);
  return std::max(er.max_abs, ez.max_abs);
}

// Voxels per work-item of the map kernels: ConnectivityOptions::vector_width (0: the device's preferred width).
class SeedCorrelationWidth : public ::testing::TestWithParam<int> {
 protected:
  ConnectivityOptions with_width(ConnectivityOptions options) const {
    options.vector_width = GetParam();
    return options;
  }
  // The grids below have odd voxel counts, so every width > 1 ends with a partial group of lanes.
  static void expect_partial_group(const SeedCorrelation& corr, int64_t voxels) {
    if (corr.vector_width() > 1) {
      EXPECT_NE(voxels % corr.vector_width(), 0) << "no partial group to test";
    }
  }
};

std::string width_name(const ::testing::TestParamInfo<int>& info) {
  return info.param == 0 ? "preferred" : "vec" + std::to_string(info.param);
}

TEST_P(SeedCorrelationWidth, LiveRingMatchesReferenceEveryTr) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Device& dev = test::test_device();
  const Image bold = test::make_series({.dims = {19, 15, 11}, .volumes = 40, .seed = seed});
  const auto seed_voxels = seed_from_sphere(bold.header(), Eigen::Vector3d(1.0, -2.0, 0.5), 4.0);
  ASSERT_GT(seed_voxels.size(), 1u);
  const int64_t window = 23, capacity = 29;  // the ring holds more than the window
  DeviceRingBuffer ring(dev, bold.header().voxels_per_volume(), capacity);
  SeedCorrelation corr(dev, bold.header(), seed_voxels, capacity, with_width({.window = window}));
  expect_partial_group(corr, bold.header().voxels_per_volume());
  double worst_sliding = 0.0, worst_cumulative = 0.0;
  test::drive_ring(ring, bold, [&](int64_t t, std::span<const int64_t> slots, int64_t newest, const ClEvent& pushed) {
    poison(corr);
    corr.update(ring.data(), slots, newest, &pushed);
    const int64_t n = std::min<int64_t>(window, t + 1);
    EXPECT_EQ(corr.window_volumes(), n);
    EXPECT_EQ(corr.cumulative_volumes(), t + 1);
    const std::string at = "TR " + std::to_string(t);
    worst_sliding = std::max(worst_sliding, expect_maps(corr, reference_r(bold, seed_voxels, t + 1 - n, n), true,
                                                        kSlidingTolerance, at + " sliding"));
    worst_cumulative = std::max(worst_cumulative, expect_maps(corr, reference_r(bold, seed_voxels, 0, t + 1), false,
                                                              kCumulativeTolerance, at + " cumulative"));
  });
  std::printf("live ring, vector width %d: max error sliding %.3g, cumulative %.3g (r and z, 40 TRs)\n",
              corr.vector_width(), worst_sliding, worst_cumulative);
}

TEST_P(SeedCorrelationWidth, OfflineSeriesUsesTheSameKernelsAsTheRing) {
  // Same volumes, same window order: the series path (slot t = volume t) must give bit-identical maps.
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Device& dev = test::test_device();
  const Image bold = test::make_series({.dims = {13, 9, 7}, .volumes = 31, .seed = seed});
  const auto seed_voxels = seed_from_sphere(bold.header(), Eigen::Vector3d(0.0, 0.0, 0.0), 3.0);
  const ConnectivityOptions options = with_width({.window = 11});
  const SeedMaps offline = seed_correlation_series(dev, bold, seed_voxels, options);
  DeviceRingBuffer ring(dev, bold.header().voxels_per_volume(), 11);
  SeedCorrelation corr(dev, bold.header(), seed_voxels, 11, options);
  expect_partial_group(corr, bold.header().voxels_per_volume());
  test::drive_ring(ring, bold, [&](int64_t, std::span<const int64_t> slots, int64_t newest, const ClEvent& pushed) {
    corr.update(ring.data(), slots, newest, &pushed);
  });
  const auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
    }
    return true;
  };
  EXPECT_TRUE(same(offline.sliding_r, corr.read(corr.sliding_r())));
  EXPECT_TRUE(same(offline.sliding_z, corr.read(corr.sliding_z())));
  EXPECT_TRUE(same(offline.cumulative_r, corr.read(corr.cumulative_r())));
  EXPECT_TRUE(same(offline.cumulative_z, corr.read(corr.cumulative_z())));
  // And the offline maps against the reference (last 11 volumes; all 31).
  const auto ref_sliding = reference_r(bold, seed_voxels, 20, 11);
  EXPECT_LT(test::compare_maps(offline.sliding_r, ref_sliding).max_abs, kSlidingTolerance);
  EXPECT_LT(test::compare_maps(offline.cumulative_r, reference_r(bold, seed_voxels, 0, 31)).max_abs,
            kCumulativeTolerance);
}

TEST_P(SeedCorrelationWidth, AnalyticCases) {
  // A one-voxel seed (radius 0 selects the voxel containing the point); voxel a = the seed's values, b = 2000 - them
  // (anti-correlated), c = 3 * them - 500 (a positive affine map), d constant. Seed mean of one voxel is exact, so a's
  // sums equal the seed's bit for bit: r = 1 up to the rounding of sqrt(c)^2 (1e-6). b and c go through float
  // arithmetic (rounded 2000 - x, 3x - 500): |r| = 1 within 1e-5. A constant voxel has no correlation: NaN (r and z).
  // d is the last voxel, in the partial last group of lanes (315 voxels).
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Device& dev = test::test_device();
  Image bold = test::make_series({.dims = {9, 7, 5}, .volumes = 30, .seed = seed});
  const auto& h = bold.header();
  const Eigen::Vector4d centre = h.affine * Eigen::Vector4d(4, 3, 2, 1);
  const auto seed_voxels = seed_from_sphere(h, centre.head<3>(), 0.0);
  ASSERT_EQ(seed_voxels.size(), 1u);
  const int64_t s = seed_voxels[0], a = 0, b = 1, c = 2, d = h.voxels_per_volume() - 1;
  for (int64_t t = 0; t < bold.nt(); ++t) {
    auto vol = bold.volume(t);
    const float x = vol[static_cast<size_t>(s)];
    vol[a] = x;
    vol[b] = 2000.0f - x;
    vol[c] = 3.0f * x - 500.0f;
    vol[static_cast<size_t>(d)] = 1234.5f;
  }
  const SeedMaps m = seed_correlation_series(dev, bold, seed_voxels, with_width({.window = 17}));
  const float z_max = static_cast<float>(fisher_z(1.0));
  EXPECT_NEAR(z_max, 8.6643, 1e-4);
  for (const auto* r : {&m.sliding_r, &m.cumulative_r}) {
    EXPECT_NEAR((*r)[static_cast<size_t>(s)], 1.0f, 1e-6f);
    EXPECT_NEAR((*r)[a], 1.0f, 1e-6f);
    EXPECT_NEAR((*r)[b], -1.0f, 1e-5f);
    EXPECT_NEAR((*r)[c], 1.0f, 1e-5f);
    EXPECT_TRUE(std::isnan((*r)[static_cast<size_t>(d)]));
  }
  for (const auto* z : {&m.sliding_z, &m.cumulative_z}) {
    // |r| within 1e-6 of 1 is clamped to 1 - 2^-24 or lies within a few ulps of it: z >= atanh(1 - 1e-6) = 7.25.
    EXPECT_GT((*z)[a], 7.2f);
    EXPECT_LE((*z)[a], z_max * 1.0001f);
    EXPECT_LT((*z)[b], -5.9f);  // atanh(-(1 - 1e-5)) = -6.1
    EXPECT_TRUE(std::isnan((*z)[static_cast<size_t>(d)]));
  }
}

TEST_P(SeedCorrelationWidth, NonFiniteSamplesArePairwiseComplete) {
  // NaN/Inf voxel values drop that volume for that voxel only; a volume with no finite seed voxel drops out for every
  // voxel; an all-NaN voxel is NaN. The reference does the same (pearson over pairs where both are finite).
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Device& dev = test::test_device();
  Image bold = test::make_series({.dims = {11, 9, 7}, .volumes = 37, .seed = seed});
  const auto seed_voxels = seed_from_sphere(bold.header(), Eigen::Vector3d(0, 0, 0), 3.0);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> voxel(0, bold.header().voxels_per_volume() - 1);
  for (int64_t t = 0; t < bold.nt(); ++t) {
    for (int k = 0; k < 20; ++k) {
      bold.volume(t)[static_cast<size_t>(voxel(rng))] = k % 2 ? kNaNf : std::numeric_limits<float>::infinity();
    }
  }
  bold.volume(5)[static_cast<size_t>(seed_voxels[0])] = kNaNf;                   // the seed mean skips it
  for (int32_t v : seed_voxels) bold.volume(9)[static_cast<size_t>(v)] = kNaNf;  // no seed value at volume 9
  for (int64_t t = 0; t < bold.nt(); ++t) bold.volume(t)[7] = kNaNf;             // an all-NaN voxel
  // Lanes of one group whose shifts come from different volumes: non-finite first values (volume 0 for the cumulative
  // sums, volume 24 for the last sliding window) in some lanes of the first groups and in the last, partial group.
  const int64_t last = bold.header().voxels_per_volume() - 1;
  for (int64_t v : {int64_t{1}, int64_t{5}, int64_t{17}, int64_t{18}, last - 2, last}) {
    bold.volume(0)[static_cast<size_t>(v)] = kNaNf;
    bold.volume(24)[static_cast<size_t>(v)] = std::numeric_limits<float>::infinity();
  }
  bold.volume(25)[18] = kNaNf;  // voxel 18's window shift comes from volume 26
  const SeedMaps m = seed_correlation_series(dev, bold, seed_voxels, with_width({.window = 13}));
  const auto check = [&](const std::vector<float>& got, int64_t first, int64_t count, double tol) {
    const auto ref = reference_r(bold, seed_voxels, first, count);
    const auto e = test::compare_maps(got, ref);
    EXPECT_EQ(e.mismatched_nan, 0) << test::describe(e);
    EXPECT_LT(e.max_abs, tol) << test::describe(e);
    EXPECT_TRUE(std::isnan(got[7]));
  };
  check(m.sliding_r, 24, 13, kSlidingTolerance);
  check(m.cumulative_r, 0, 37, kCumulativeTolerance);
}

TEST_P(SeedCorrelationWidth, CumulativeStaysAccurateOver2000Volumes) {
  // 2,000 volumes through a ring of 23 slots, baseline ~1000 with a 5% drift, fluctuations ~3: the regime where plain
  // float running sums of raw values lose every significant digit of the variance. Compared with the double reference
  // at several points and at the end.
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Device& dev = test::test_device();
  const Image bold = test::make_series(
      {.dims = {19, 15, 11}, .volumes = 2000, .signal = 3.0, .noise = 2.0, .drift = 0.05, .seed = seed});
  const auto seed_voxels = seed_from_sphere(bold.header(), Eigen::Vector3d(-3.0, 3.0, 0.0), 5.0);
  const int64_t capacity = 23;
  DeviceRingBuffer ring(dev, bold.header().voxels_per_volume(), capacity);
  SeedCorrelation corr(dev, bold.header(), seed_voxels, capacity, with_width({.window = capacity}));
  expect_partial_group(corr, bold.header().voxels_per_volume());
  double worst = 0.0;
  test::drive_ring(ring, bold, [&](int64_t t, std::span<const int64_t> slots, int64_t newest, const ClEvent& pushed) {
    corr.update(ring.data(), slots, newest, &pushed);
    if (t == 99 || t == 999 || t == 1999) {
      const auto r = corr.read(corr.cumulative_r());
      const auto e = test::compare_maps(r, reference_r(bold, seed_voxels, 0, t + 1));
      EXPECT_EQ(e.mismatched_nan, 0) << "TR " << t << ": " << test::describe(e);
      EXPECT_LT(e.max_abs, kLongRunTolerance) << "TR " << t << ": " << test::describe(e);
      worst = std::max(worst, e.max_abs);
    }
  });
  RecordProperty("max_abs_r_error", std::to_string(worst));
  std::printf("cumulative over 2000 volumes, vector width %d: max |r - r_ref| = %.3g\n", corr.vector_width(), worst);
  const auto z = corr.read(corr.cumulative_z());
  const auto r_ref = reference_r(bold, seed_voxels, 0, 2000);
  const auto ez = test::compare_z(z, reference::fisher_z(r_ref), r_ref);
  EXPECT_EQ(ez.mismatched_nan, 0);
  EXPECT_LT(ez.max_abs, kLongRunTolerance) << test::describe(ez);
}

TEST_P(SeedCorrelationWidth, RealBoldMatchesReference) {
  // nitime's fmri1 (real BOLD, 10x10x18x40): seed = a 6 mm sphere about the centre of the grid.
  const auto path = test::installed_data("nitime/fmri1.nii.gz");
  if (!path) GTEST_SKIP() << test::missing_installed_data("nitime/fmri1.nii.gz");
  Device& dev = test::test_device();
  const Image bold = read_nifti(*path);
  const auto& h = bold.header();
  const Eigen::Vector4d centre = h.affine * Eigen::Vector4d(4.5, 4.5, 8.5, 1.0);
  const auto seed_voxels = seed_from_sphere(h, centre.head<3>(), 6.0);
  const SeedMaps m = seed_correlation_series(dev, bold, seed_voxels, with_width({.window = 20}));
  for (const auto& [got, first, count] :
       {std::tuple{&m.sliding_r, int64_t{20}, int64_t{20}}, std::tuple{&m.cumulative_r, int64_t{0}, int64_t{40}}}) {
    const auto ref = reference_r(bold, seed_voxels, first, count);
    const auto e = test::compare_maps(*got, ref);
    EXPECT_EQ(e.mismatched_nan, 0) << test::describe(e);
    EXPECT_LT(e.max_abs, kSlidingTolerance) << test::describe(e);
    EXPECT_GT(e.compared, 1000);
  }
}

TEST_P(SeedCorrelationWidth, AgreesWithOneVoxelPerWorkItem) {
  // The same series (with non-finite samples) at this width and at width 1: each lane does the scalar kernel's float
  // operations in the same order, so the maps should agree to the last bit up to the vector forms of sqrt, division
  // and atanh. Measured on PoCL: bit-identical. Allowed: the NaN pattern exactly, values within 1e-6 (an r-scale
  // error; z as |dz| (1 - r^2)), far below the reference tolerances.
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Device& dev = test::test_device();
  Image bold = test::make_series({.dims = {19, 15, 11}, .volumes = 60, .seed = seed});
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> voxel(0, bold.header().voxels_per_volume() - 1);
  for (int64_t t = 0; t < bold.nt(); ++t) {
    for (int k = 0; k < 30; ++k) bold.volume(t)[static_cast<size_t>(voxel(rng))] = kNaNf;
  }
  const auto seed_voxels = seed_from_sphere(bold.header(), Eigen::Vector3d(1.0, -2.0, 0.5), 4.0);
  const SeedMaps got = seed_correlation_series(dev, bold, seed_voxels, with_width({.window = 23}));
  const SeedMaps one = seed_correlation_series(dev, bold, seed_voxels, {.window = 23, .vector_width = 1});
  const auto compare = [](const char* what, const std::vector<float>& a, const std::vector<float>& b,
                          const std::vector<float>& r) {
    ASSERT_EQ(a.size(), b.size());
    int64_t identical = 0, nan_mismatch = 0;
    double worst = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(a[i]) != std::isnan(b[i])) {
        ++nan_mismatch;
        continue;
      }
      if (std::isnan(a[i]) || a[i] == b[i]) {
        ++identical;
        continue;
      }
      const double scale = r.empty() ? 1.0 : 1.0 - static_cast<double>(r[i]) * r[i];
      worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]) * scale);
    }
    EXPECT_EQ(nan_mismatch, 0) << what;
    EXPECT_LE(worst, 1e-6) << what;
    std::printf("%s: %lld of %zu bit-identical to width 1, max difference %.3g\n", what,
                static_cast<long long>(identical), a.size(), worst);
  };
  compare("sliding r", got.sliding_r, one.sliding_r, {});
  compare("sliding z", got.sliding_z, one.sliding_z, one.sliding_r);
  compare("cumulative r", got.cumulative_r, one.cumulative_r, {});
  compare("cumulative z", got.cumulative_z, one.cumulative_z, one.cumulative_r);
}

INSTANTIATE_TEST_SUITE_P(Widths, SeedCorrelationWidth, ::testing::Values(1, 2, 4, 8, 16, 0), width_name);

TEST(SeedCorrelation, RejectsBadInput) {
  Device& dev = test::test_device();
  const Image bold = test::make_series({.dims = {7, 6, 5}, .volumes = 4, .seed = 3});
  const auto& h = bold.header();
  // Seeds: a mask on another grid, an empty mask, a sphere outside the grid, a negative radius.
  ImageHeader other = h;
  other.num_volumes = 1;
  other.affine(0, 3) += 3.0;
  EXPECT_THROW(seed_from_mask(Image(other, 1.0f), h), std::invalid_argument);
  ImageHeader same = h;
  same.num_volumes = 1;
  EXPECT_THROW(seed_from_mask(Image(same, 0.0f), h), std::invalid_argument);
  EXPECT_THROW(seed_from_sphere(h, Eigen::Vector3d(500, 0, 0), 10.0), std::invalid_argument);
  EXPECT_THROW(seed_from_sphere(h, Eigen::Vector3d(0, 0, 0), -1.0), std::invalid_argument);
  // Construction: empty seed, voxel outside the grid, window larger than the ring or < 2, nothing enabled, a vector
  // width that is not 0, 1, 2, 4, 8 or 16.
  const std::vector<int32_t> ok{0, 1};
  EXPECT_THROW(SeedCorrelation(dev, h, std::vector<int32_t>{}, 4), std::invalid_argument);
  EXPECT_THROW(SeedCorrelation(dev, h, std::vector<int32_t>{210}, 4), std::invalid_argument);
  EXPECT_THROW(SeedCorrelation(dev, h, ok, 4, {.window = 5}), std::invalid_argument);
  EXPECT_THROW(SeedCorrelation(dev, h, ok, 4, {.window = 1}), std::invalid_argument);
  EXPECT_THROW(SeedCorrelation(dev, h, ok, 4, {.window = 4, .sliding = false, .cumulative = false}),
               std::invalid_argument);
  for (int width : {-1, 3, 32}) {
    EXPECT_THROW(SeedCorrelation(dev, h, ok, 4, {.window = 4, .vector_width = width}), std::invalid_argument) << width;
  }
  // update(): newest not last, slot out of range, slot twice, too many slots, data buffer too small.
  SeedCorrelation corr(dev, h, ok, 4, {.window = 3});
  DeviceBuffer<float> data(dev, static_cast<size_t>(4 * h.voxels_per_volume()));
  const std::vector<int64_t> good{0, 1, 2};
  EXPECT_THROW(corr.update(data, good, 1), std::invalid_argument);
  EXPECT_THROW(corr.update(data, std::vector<int64_t>{0, 4}, 4), std::invalid_argument);
  EXPECT_THROW(corr.update(data, std::vector<int64_t>{1, 1}, 1), std::invalid_argument);
  EXPECT_THROW(corr.update(data, std::vector<int64_t>{0, 1, 2, 3, 0}, 0), std::invalid_argument);
  EXPECT_THROW(corr.update(data, std::vector<int64_t>{}, 0), std::invalid_argument);
  DeviceBuffer<float> small(dev, static_cast<size_t>(h.voxels_per_volume()));
  EXPECT_THROW(corr.update(small, good, 2), std::invalid_argument);
  // A rejected call leaves the object usable: a valid update still works and counts one volume.
  data.write(dev.queue(), std::span<const float>(bold.data().data(), bold.data().size()));
  corr.update(data, good, 2);
  EXPECT_EQ(corr.cumulative_volumes(), 1);
  EXPECT_EQ(corr.window_volumes(), 3);
}

}  // namespace
}  // namespace rtf
