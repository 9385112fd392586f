// ROI time courses and ROI x ROI correlation: device ROI means against the double reference on odd grids with random
// labels (an empty region, NaN voxels), the host matrices (sliding, cumulative, Fisher z) against the reference,
// missing regions, skipped non-finite volumes, 2,000 volumes, the live ring path, and bad input.
// ctest-label: gpu
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/connectivity/atlas.hpp"
#include "core/connectivity/fisher_z.hpp"
#include "core/connectivity/roi_correlation.hpp"
#include "core/connectivity/roi_timeseries.hpp"
#include "core/reference/connectivity_reference.hpp"
#include "tests/connectivity/connectivity_fixtures.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();

// ROI means: compensated float sums kept as (hi, lo) pairs, combined in double: measured max relative error ~2e-15
// against the double reference. Allow 1e-12.
constexpr double kMeanRelTolerance = 1e-12;
// Matrices against the reference from the float series (the whole path): measured max |dr| ~2e-11, at the first TRs,
// where 2-5 volumes amplify the 1e-15 errors of the means; ~1e-14 after 2,000 volumes. Allow 1e-9.
constexpr double kMatrixTolerance = 1e-9;
// Matrices against the reference computed from the device's own means (the host arithmetic alone): both double,
// differing in summation order (one-pass shifted or two-pass); measured ~1e-15. Allow 1e-12.
constexpr double kSameMeansTolerance = 1e-12;

uint64_t fresh_seed() {
  return std::random_device{}();
}

// Random labels: region r of `rois` gets voxels with probability ~1/(rois + 2); region `empty` gets none.
RoiSet random_rois(std::array<int64_t, 3> dims, int32_t rois, int32_t empty, uint64_t seed) {
  ImageHeader h;
  h.dims = dims;
  Image labels(h, 0.0f);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, rois + 1);
  for (float& v : labels.data()) {
    const int32_t l = pick(rng);
    v = (l >= 1 && l <= rois && l != empty + 1) ? static_cast<float>(l) : 0.0f;
  }
  std::vector<AtlasRegion> regions;
  for (int32_t l = 1; l <= rois; ++l) regions.push_back({l, "region_" + std::to_string(l)});
  return rois_on_grid(make_atlas(std::move(labels), regions), h, AtlasPlacement::kSameGrid);
}

std::vector<bool> present_of(const RoiSet& rois) {
  std::vector<bool> p;
  for (int64_t c : rois.voxel_counts) p.push_back(c > 0);
  return p;
}

// Reference means matrix [volumes first..first+count-1][R] in double from the float series.
Eigen::MatrixXd reference_means(const Image& bold, const RoiSet& rois, int64_t first, int64_t count) {
  Eigen::MatrixXd m(count, rois.size());
  for (int64_t t = 0; t < count; ++t) {
    const auto row = reference::roi_means(bold.volume(first + t), rois.roi_of_voxel, rois.size());
    for (int64_t c = 0; c < rois.size(); ++c) m(t, c) = row[static_cast<size_t>(c)];
  }
  return m;
}

double max_abs_diff(const Eigen::MatrixXd& got, const Eigen::MatrixXd& ref, int64_t* nan_mismatch) {
  double worst = 0.0;
  for (Eigen::Index i = 0; i < got.rows(); ++i) {
    for (Eigen::Index j = 0; j < got.cols(); ++j) {
      if (std::isnan(got(i, j)) != std::isnan(ref(i, j))) {
        ++*nan_mismatch;
      } else if (!std::isnan(ref(i, j))) {
        worst = std::max(worst, std::abs(got(i, j) - ref(i, j)));
      }
    }
  }
  return worst;
}

// r within `tol` and z within tol / (1 - r^2) (an r-scale error), NaN pattern identical.
void expect_matrices(const Eigen::MatrixXd& r, const Eigen::MatrixXd& z, const Eigen::MatrixXd& r_ref, double tol,
                     const std::string& what) {
  int64_t nan_mismatch = 0;
  EXPECT_LT(max_abs_diff(r, r_ref, &nan_mismatch), tol) << what;
  const Eigen::MatrixXd z_ref = reference::fisher_z(r_ref);
  double worst_z = 0.0;
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    for (Eigen::Index j = 0; j < z.cols(); ++j) {
      if (std::isnan(z(i, j)) != std::isnan(z_ref(i, j))) ++nan_mismatch;
      if (i == j || std::isnan(z_ref(i, j))) continue;
      worst_z = std::max(worst_z, std::abs(z(i, j) - z_ref(i, j)) * (1.0 - r_ref(i, j) * r_ref(i, j)));
    }
  }
  EXPECT_LT(worst_z, tol) << what << " (z)";
  EXPECT_EQ(nan_mismatch, 0) << what;
  // The diagonal of a present region: r = 1 exactly, z = fisher_z(1).
  for (Eigen::Index i = 0; i < r.rows(); ++i) {
    if (!std::isnan(r_ref(i, i))) {
      EXPECT_EQ(r(i, i), 1.0) << what;
      EXPECT_EQ(z(i, i), fisher_z(1.0)) << what;
    }
  }
}

class RoiTimeseriesTest : public ::testing::TestWithParam<size_t> {};

// Both reductions: one work-item per region (CPU devices) and work-groups of 128 with a local-memory tree (GPUs).
TEST_P(RoiTimeseriesTest, DeviceMeansMatchReference) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Device& dev = test::test_device();
  Image bold = test::make_series({.dims = {19, 15, 11}, .volumes = 5, .seed = seed});
  const RoiSet rois = random_rois(bold.header().dims, 13, 4, seed + 1);
  ASSERT_EQ(rois.voxel_counts[4], 0);
  // Some non-finite voxels, and one region entirely NaN in volume 3.
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> voxel(0, bold.data().size() - 1);
  for (int k = 0; k < 200; ++k) bold.data()[voxel(rng)] = k % 3 ? kNaNf : -std::numeric_limits<float>::infinity();
  for (size_t v = 0; v < rois.roi_of_voxel.size(); ++v) {
    if (rois.roi_of_voxel[v] == 7) bold.volume(3)[v] = kNaNf;
  }
  const int64_t nvox = bold.header().voxels_per_volume();
  RoiTimeseries ts(dev, rois.roi_of_voxel, rois.size(), 6, GetParam());  // one slot more than volumes
  ASSERT_EQ(ts.local_size(), GetParam());
  DeviceBuffer<float> data(dev, static_cast<size_t>(6 * nvox));
  data.write(dev.queue(), bold.data());
  // Poison: every computed mean must overwrite NaN; a sentinel in the unused slot must survive.
  auto& table = const_cast<DeviceBuffer<cl_float2>&>(ts.means());
  table.fill(dev.queue(), cl_float2{{kNaNf, kNaNf}});
  const std::vector<cl_float2> sentinel(static_cast<size_t>(rois.size()), cl_float2{{42.0f, 0.5f}});
  table.write(dev.queue(), sentinel, static_cast<size_t>(5 * rois.size()));
  for (int64_t t = 0; t < 5; ++t) ts.enqueue(data, t);
  std::vector<double> got(static_cast<size_t>(rois.size()));
  double worst = 0.0;
  for (int64_t t = 0; t < 5; ++t) {
    ts.read(t, got);
    const auto ref = reference::roi_means(bold.volume(t), rois.roi_of_voxel, rois.size());
    for (size_t r = 0; r < ref.size(); ++r) {
      if (std::isnan(ref[r])) {
        EXPECT_TRUE(std::isnan(got[r])) << "volume " << t << " region " << r;
      } else {
        EXPECT_NEAR(got[r], ref[r], kMeanRelTolerance * std::abs(ref[r])) << "volume " << t << " region " << r;
        worst = std::max(worst, std::abs(got[r] - ref[r]) / std::abs(ref[r]));
      }
    }
    EXPECT_TRUE(std::isnan(got[4]));             // the empty region
    EXPECT_EQ(std::isnan(got[7]), t == 3) << t;  // all-NaN in volume 3 only
  }
  std::printf("roi means: max relative error %.3g\n", worst);
  ts.read(5, got);
  EXPECT_EQ(got, std::vector<double>(got.size(), 42.5));
  EXPECT_EQ(ts.voxel_counts(), rois.voxel_counts);
}

INSTANTIATE_TEST_SUITE_P(LocalSizes, RoiTimeseriesTest, ::testing::Values(size_t{1}, size_t{128}));

TEST(RoiCorrelation, LiveRingMatchesReferenceEveryTr) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Device& dev = test::test_device();
  const Image bold = test::make_series({.dims = {19, 15, 11}, .volumes = 45, .signal = 4.0, .seed = seed});
  const RoiSet rois = random_rois(bold.header().dims, 17, 9, seed + 1);
  const int64_t window = 23, capacity = 27;
  DeviceRingBuffer ring(dev, bold.header().voxels_per_volume(), capacity);
  RoiCorrelation corr(dev, rois, capacity, {.window = window});
  const auto present = present_of(rois);
  Eigen::MatrixXd device_means(bold.nt(), rois.size());
  test::drive_ring(ring, bold, [&](int64_t t, std::span<const int64_t> slots, int64_t newest, const ClEvent& pushed) {
    corr.update(ring.data(), slots, newest, &pushed);
    for (int64_t c = 0; c < rois.size(); ++c) device_means(t, c) = corr.newest_means()[static_cast<size_t>(c)];
    const int64_t n = std::min<int64_t>(window, t + 1);
    const std::string at = "TR " + std::to_string(t);
    ASSERT_EQ(corr.window_means().rows(), n);
    EXPECT_TRUE(corr.window_means().isApprox(device_means.middleRows(t + 1 - n, n)) ||
                corr.window_means().hasNaN());  // region 9 is empty: NaN column
    EXPECT_EQ(corr.sliding_volumes(), n);
    EXPECT_EQ(corr.cumulative_volumes(), t + 1);
    expect_matrices(corr.sliding_r(), corr.sliding_z(),
                    reference::roi_correlation_matrix(reference_means(bold, rois, t + 1 - n, n), present),
                    kMatrixTolerance, at + " sliding");
    expect_matrices(corr.cumulative_r(), corr.cumulative_z(),
                    reference::roi_correlation_matrix(reference_means(bold, rois, 0, t + 1), present), kMatrixTolerance,
                    at + " cumulative");
    // The host math alone, from the device's own means.
    expect_matrices(corr.sliding_r(), corr.sliding_z(),
                    reference::roi_correlation_matrix(device_means.middleRows(t + 1 - n, n), present),
                    kSameMeansTolerance, at + " sliding, same means");
    expect_matrices(corr.cumulative_r(), corr.cumulative_z(),
                    reference::roi_correlation_matrix(device_means.topRows(t + 1), present), kSameMeansTolerance,
                    at + " cumulative, same means");
  });
  // The empty region: NaN row and column, reported by name.
  EXPECT_TRUE(corr.sliding_r().row(9).array().isNaN().all());
  EXPECT_TRUE(corr.cumulative_z().col(9).array().isNaN().all());
  EXPECT_EQ(rois.missing(), std::vector<std::string>{"region_10"});
  EXPECT_EQ(corr.rois().present(), 16);
}

TEST(RoiCorrelation, DestroyedWithAReadInFlightWaitsForIt) {
  // enqueue() starts non-blocking reads into the object's staging memory; destroying it before finish() (as an
  // exception between the two would) must wait for them, and the ring and device stay usable afterwards.
  Device& dev = test::test_device();
  const Image bold = test::make_series({.dims = {17, 13, 9}, .volumes = 6, .signal = 4.0, .seed = fresh_seed()});
  const RoiSet rois = random_rois(bold.header().dims, 11, -1, 5);
  DeviceRingBuffer ring(dev, bold.header().voxels_per_volume(), 8);
  test::drive_ring(ring, bold, [&](int64_t, std::span<const int64_t> slots, int64_t newest, const ClEvent& pushed) {
    auto corr = std::make_unique<RoiCorrelation>(dev, rois, 8, ConnectivityOptions{.window = 4});
    corr->enqueue(ring.data(), slots, newest, &pushed);
    corr.reset();  // no finish()
  });
  DeviceRingBuffer fresh(dev, bold.header().voxels_per_volume(), 8);
  RoiCorrelation corr(dev, rois, 8, {.window = 4});
  test::drive_ring(fresh, bold, [&](int64_t, std::span<const int64_t> slots, int64_t newest, const ClEvent& pushed) {
    corr.update(fresh.data(), slots, newest, &pushed);
  });
  EXPECT_EQ(corr.cumulative_volumes(), bold.nt());
}

TEST(RoiCorrelation, NonFiniteVolumesAreSkipped) {
  // An all-NaN volume (a present region without a finite voxel) leaves both estimates; a few NaN voxels do not.
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Device& dev = test::test_device();
  Image bold = test::make_series({.dims = {9, 11, 7}, .volumes = 30, .seed = seed});
  for (float& v : bold.volume(12)) v = kNaNf;
  bold.volume(20)[3] = kNaNf;
  const RoiSet rois = random_rois(bold.header().dims, 6, -1, seed + 1);
  ASSERT_EQ(rois.present(), 6);
  const RoiCorrelationSeries s = roi_correlation_series(dev, bold, rois, {.window = 21});
  EXPECT_TRUE(s.means.row(12).array().isNaN().all());
  const auto present = present_of(rois);
  expect_matrices(s.sliding_r, s.sliding_z, reference::roi_correlation_matrix(s.means.bottomRows(21), present),
                  kSameMeansTolerance, "sliding");
  expect_matrices(s.cumulative_r, s.cumulative_z, reference::roi_correlation_matrix(s.means, present),
                  kSameMeansTolerance, "cumulative");
  RoiCorrelation corr(dev, rois, 30, {.window = 21});
  DeviceBuffer<float> data(dev, bold.data().size());
  data.write(dev.queue(), bold.data());
  std::vector<int64_t> slots;
  for (int64_t t = 0; t < 30; ++t) {
    slots.push_back(t);
    corr.update(data, std::span<const int64_t>(slots).last(std::min<size_t>(slots.size(), 21)), t);
  }
  EXPECT_EQ(corr.skipped_volumes(), 1);
  EXPECT_EQ(corr.cumulative_volumes(), 29);
  EXPECT_EQ(corr.sliding_volumes(), 20);  // volumes 9..29 less volume 12
  EXPECT_EQ(corr.window_means().rows(), 21);
}

TEST(RoiCorrelation, CumulativeOver2000Volumes) {
  // Host double sums shifted by the first volume's means: against the two-pass reference over 2,000 volumes with a
  // 5% drift; both from the device's means (the host arithmetic), and from the float series (the whole path).
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Device& dev = test::test_device();
  const Image bold = test::make_series(
      {.dims = {11, 9, 7}, .volumes = 2000, .signal = 3.0, .noise = 2.0, .drift = 0.05, .seed = seed});
  const RoiSet rois = random_rois(bold.header().dims, 9, 2, seed + 1);
  const RoiCorrelationSeries s = roi_correlation_series(dev, bold, rois, {.window = 100});
  const auto present = present_of(rois);
  expect_matrices(s.cumulative_r, s.cumulative_z, reference::roi_correlation_matrix(s.means, present),
                  kSameMeansTolerance, "same means");
  expect_matrices(s.cumulative_r, s.cumulative_z,
                  reference::roi_correlation_matrix(reference_means(bold, rois, 0, 2000), present), kMatrixTolerance,
                  "whole path");
}

TEST(RoiCorrelation, EnqueueFinishEqualsUpdate) {
  // The split form, with other device work between the halves, gives the same matrices as update(), bit for bit.
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Device& dev = test::test_device();
  const Image bold = test::make_series({.dims = {9, 8, 7}, .volumes = 15, .seed = seed});
  const RoiSet rois = random_rois(bold.header().dims, 5, -1, seed + 1);
  DeviceBuffer<float> data(dev, bold.data().size());
  data.write(dev.queue(), bold.data());
  RoiCorrelation whole(dev, rois, 15, {.window = 6}), split(dev, rois, 15, {.window = 6});
  DeviceBuffer<float> other(dev, 4096);
  std::vector<int64_t> slots;
  for (int64_t t = 0; t < 15; ++t) {
    slots.push_back(t);
    const auto window = std::span<const int64_t>(slots).last(std::min<size_t>(slots.size(), 6));
    whole.update(data, window, t);
    split.enqueue(data, window, t);
    other.fill(dev.queue(), 1.0f);  // other device work in between
    split.finish();
  }
  for (const auto& [a, b] :
       {std::pair{&whole.sliding_z(), &split.sliding_z()}, std::pair{&whole.cumulative_r(), &split.cumulative_r()}}) {
    EXPECT_TRUE(((a->array() == b->array()) || (a->array().isNaN() && b->array().isNaN())).all());
  }
  EXPECT_THROW(split.finish(), std::logic_error);
  split.enqueue(data, std::span<const int64_t>(slots).last(6), 14);
  EXPECT_THROW(split.enqueue(data, std::span<const int64_t>(slots).last(6), 14), std::logic_error);
  split.finish();
}

TEST(RoiCorrelation, RejectsBadInput) {
  Device& dev = test::test_device();
  const RoiSet rois = random_rois({7, 6, 5}, 4, -1, 5);
  EXPECT_THROW(RoiCorrelation(dev, rois, 10, {.window = 11}), std::invalid_argument);  // window larger than the ring
  EXPECT_THROW(RoiCorrelation(dev, rois, 10, {.window = 1}), std::invalid_argument);
  RoiSet wrong = rois;
  wrong.roi_of_voxel.pop_back();
  EXPECT_THROW(RoiCorrelation(dev, wrong, 10), std::invalid_argument);
  RoiSet bad_index = rois;
  bad_index.roi_of_voxel[3] = 4;
  EXPECT_THROW(RoiCorrelation(dev, bad_index, 10, {.window = 5}), std::invalid_argument);
  EXPECT_THROW(RoiTimeseries(dev, rois.roi_of_voxel, 0, 4), std::invalid_argument);
  EXPECT_THROW(RoiTimeseries(dev, rois.roi_of_voxel, 4, 4, 96), std::invalid_argument);
  RoiCorrelation corr(dev, rois, 10, {.window = 5});
  DeviceBuffer<float> data(dev, 10 * 210);
  EXPECT_THROW(corr.update(data, std::vector<int64_t>{0, 10}, 10), std::invalid_argument);
  EXPECT_THROW(corr.update(data, std::vector<int64_t>{3, 2}, 3), std::invalid_argument);
  DeviceBuffer<float> small(dev, 210);
  EXPECT_THROW(corr.update(small, std::vector<int64_t>{0}, 0), std::invalid_argument);
  // A rejected call leaves the object usable.
  data.fill(dev.queue(), 1.0f);
  corr.update(data, std::vector<int64_t>{0, 1}, 1);
  EXPECT_EQ(corr.cumulative_volumes(), 1);
  EXPECT_EQ(corr.sliding_volumes(), 2);
  // The series helper refuses a ROI set of another grid.
  const Image bold = test::make_series({.dims = {7, 6, 6}, .volumes = 6, .seed = 1});
  EXPECT_THROW(roi_correlation_series(dev, bold, rois, {.window = 5}), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
