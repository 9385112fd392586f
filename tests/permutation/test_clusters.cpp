// ctest-label: gpu
// Cluster statistics (core/permutation/clusters.hpp) against the flood-fill reference: odd grids with random masks and
// fresh random smooth maps (seed printed; RTF_TEST_SEED replays it), 6/18/26 connectivity, several thresholds and
// batches larger than max_batch. Extents and cluster counts must be equal; masses within 1e-4 relative (the device sums
// in fixed point, 2^-24, exact where t and the threshold are >= 0.5; a voxel is off by at most 2^-25 elsewhere, hence
// an absolute allowance of 2^-24 per voxel for clusters of tiny mass). Hand-made cases: neighbours that touch only at
// an edge or a corner, a mask gap that splits a line, a winding one-voxel-wide cluster through the whole grid, no
// voxel above the threshold, a mask of one voxel, bad arguments (a neighbour table of the wrong kind among them).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "core/permutation/clusters.hpp"
#include "core/permutation/tfce.hpp"
#include "core/reference/cluster_reference.hpp"
#include "tests/permutation/grid_arguments.hpp"
#include "tests/support/random_maps.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

using test::ellipsoid_mask;
using test::grid_size;
using test::random_mask;
using test::smooth_maps;
using test::test_seed;

using Dims = test::GridDims;

void expect_mass_near(double device, double reference, int64_t extent, const std::string& what) {
  const double allowance = 1e-4 * std::abs(reference) + std::ldexp(1.0, -24) * static_cast<double>(extent);
  EXPECT_NEAR(device, reference, allowance) << what;
}

void expect_maxima_equal(const ClusterMaxima& dev, const ClusterMaxima& ref) {
  ASSERT_EQ(dev.extent.size(), ref.extent.size());
  ASSERT_EQ(dev.mass.size(), ref.mass.size());
  for (size_t b = 0; b < ref.extent.size(); ++b) {
    EXPECT_EQ(dev.extent[b], ref.extent[b]) << "map " << b;
    expect_mass_near(dev.mass[b], ref.mass[b], ref.extent[b], "mass of map " + std::to_string(b));
  }
}

void expect_observed_equal(const ObservedClusters& dev, const ObservedClusters& ref) {
  EXPECT_EQ(dev.clusters, ref.clusters);
  ASSERT_EQ(dev.extent.size(), ref.extent.size());
  ASSERT_EQ(dev.mass.size(), ref.mass.size());
  for (size_t v = 0; v < ref.extent.size(); ++v) {
    ASSERT_EQ(dev.extent[v], ref.extent[v]) << "voxel " << v;
    expect_mass_near(dev.mass[v], ref.mass[v], ref.extent[v], "mass at voxel " + std::to_string(v));
  }
}

TEST(ClusterStatistics, RandomMapsMatchTheReference) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  for (const Dims dims : {Dims{13, 11, 9}, Dims{23, 19, 17}}) {
    const std::vector<uint8_t> mask = random_mask(dims, rng, 0.85);
    for (const int connectivity : {6, 18, 26}) {
      // 18: from a neighbour table made beforehand (as randomise shares one between its devices).
      auto made = connectivity == 18
                      ? std::make_unique<ClusterStatistics>(test::test_device(),
                                                            ClusterStatistics::neighbours(dims, mask, 18), 3)
                      : std::make_unique<ClusterStatistics>(test::test_device(), dims, mask, connectivity, 3);
      ClusterStatistics& clusters = *made;
      const int count = 7;  // three launches: 3 + 3 + 1
      const std::vector<float> maps = smooth_maps(dims, mask, count, rng);
      for (const float threshold : {-0.4f, 0.3f, 1.0f, 1.7f, 2.6f}) {
        SCOPED_TRACE(::testing::Message() << dims[0] << "x" << dims[1] << "x" << dims[2] << ", connectivity "
                                          << connectivity << ", threshold " << threshold);
        expect_maxima_equal(clusters.maxima(maps, count, threshold),
                            reference::cluster_maxima(dims, mask, connectivity, maps, count, threshold));
        const std::vector<float> first(maps.begin(), maps.begin() + static_cast<std::ptrdiff_t>(clusters.voxels()));
        expect_observed_equal(clusters.observed(first, threshold),
                              reference::observed_clusters(dims, mask, connectivity, first, threshold));
      }
    }
  }
}

// Two voxels above the threshold in a full 3x3x3 grid, touching at a face, an edge or a corner.
TEST(ClusterStatistics, ConnectivityDecidesWhetherEdgesAndCornersJoin) {
  const Dims dims{3, 3, 3};
  const std::vector<uint8_t> mask(27, 1);
  const auto at = [](size_t x, size_t y, size_t z) { return x + 3 * (y + 3 * z); };
  const std::array<size_t, 3> partner{at(2, 1, 1), at(2, 2, 1), at(2, 2, 2)};  // of (1, 1, 1): face, edge, corner
  std::vector<float> maps(3 * 27, -1.0f);
  for (size_t p = 0; p < 3; ++p) {
    maps[p * 27 + at(1, 1, 1)] = 2.0f;
    maps[p * 27 + partner[p]] = 3.5f;
  }
  const std::map<int, std::array<int64_t, 3>> joined{{6, {2, 1, 1}}, {18, {2, 2, 1}}, {26, {2, 2, 2}}};
  for (const auto& [connectivity, extent] : joined) {
    SCOPED_TRACE(::testing::Message() << "connectivity " << connectivity);
    ClusterStatistics clusters(test::test_device(), dims, mask, connectivity, 4);
    const ClusterMaxima m = clusters.maxima(maps, 3, 1.0f);
    for (size_t p = 0; p < 3; ++p) {
      EXPECT_EQ(m.extent[p], extent[p]) << p;
      EXPECT_DOUBLE_EQ(m.mass[p], extent[p] == 2 ? 3.5 : 2.5) << p;  // (2 - 1) + (3.5 - 1), or the larger alone
      const std::vector<float> map(maps.begin() + static_cast<std::ptrdiff_t>(p * 27),
                                   maps.begin() + static_cast<std::ptrdiff_t>((p + 1) * 27));
      const ObservedClusters o = clusters.observed(map, 1.0f);
      EXPECT_EQ(o.clusters, extent[p] == 2 ? 1 : 2) << p;
      EXPECT_EQ(o.extent[at(1, 1, 1)], extent[p]) << p;
      EXPECT_EQ(o.extent[partner[p]], extent[p]) << p;
      EXPECT_DOUBLE_EQ(o.mass[at(1, 1, 1)], extent[p] == 2 ? 3.5 : 1.0) << p;
      EXPECT_EQ(o.extent[0], 0);
      EXPECT_EQ(o.mass[0], 0.0);
      expect_observed_equal(o, reference::observed_clusters(dims, mask, connectivity, map, 1.0f));
    }
  }
}

TEST(ClusterStatistics, AVoxelOutsideTheMaskSplitsAClusterEvenAboveTheThreshold) {
  const std::vector<uint8_t> mask{1, 1, 0, 1, 1, 1};
  ClusterStatistics clusters(test::test_device(), {6, 1, 1}, mask, 26, 1);
  const ObservedClusters o = clusters.observed({1.5f, 1.5f, 1.5f, 2.5f, 1.5f}, 1.0f);
  EXPECT_EQ(o.clusters, 2);
  EXPECT_EQ(o.extent, (std::vector<int64_t>{2, 2, 3, 3, 3}));
  EXPECT_EQ(o.mass, (std::vector<double>{1.0, 1.0, 2.5, 2.5, 2.5}));
  const ClusterMaxima m = clusters.maxima({1.5f, 1.5f, 1.5f, 2.5f, 1.5f}, 1, 1.0f);
  EXPECT_EQ(m.extent[0], 3);
  EXPECT_EQ(m.mass[0], 2.5);
}

// One cluster, one voxel wide, winding through every other row of every other slice and joined slice to slice: the
// longest chains of labels the union-find can meet.
TEST(ClusterStatistics, AWindingClusterThroughTheWholeGridIsOne) {
  const Dims dims{23, 19, 17};
  const int64_t nx = dims[0], ny = dims[1], nz = dims[2];
  const std::vector<uint8_t> mask(grid_size(dims), 1);
  std::vector<float> map(grid_size(dims), -1.0f);
  const auto raise = [&](int64_t x, int64_t y, int64_t z) { map[static_cast<size_t>(x + nx * (y + ny * z))] = 2.0f; };
  for (int64_t z = 0; z < nz; z += 2) {
    for (int64_t y = 0; y < ny; y += 2) {
      for (int64_t x = 0; x < nx; ++x) raise(x, y, z);
      if (y + 2 < ny) raise((y / 2) % 2 == 0 ? nx - 1 : 0, y + 1, z);  // to the next row, at alternate ends
    }
    // To the next slice, from the end of the slice's path: with 10 rows, its last row ends at x = 0, and slices are
    // walked forwards and backwards in turn.
    if (z + 2 < nz) raise(0, (z / 2) % 2 == 0 ? ny - 1 : 0, z + 1);
  }
  const auto supra = std::count(map.begin(), map.end(), 2.0f);
  for (const int connectivity : {6, 18, 26}) {
    ClusterStatistics clusters(test::test_device(), dims, mask, connectivity, 2);
    const ClusterMaxima m = clusters.maxima(map, 1, 0.0f);
    EXPECT_EQ(m.extent[0], supra) << connectivity;
    EXPECT_EQ(m.mass[0], 2.0 * static_cast<double>(supra)) << connectivity;
    const ObservedClusters o = clusters.observed(map, 0.0f);
    EXPECT_EQ(o.clusters, 1) << connectivity;
    expect_observed_equal(o, reference::observed_clusters(dims, mask, connectivity, map, 0.0f));
  }
}

TEST(ClusterStatistics, NoVoxelAboveTheThresholdGivesZero) {
  const Dims dims{7, 5, 3};
  std::mt19937 rng(5);
  const std::vector<uint8_t> mask = random_mask(dims, rng, 0.7);
  ClusterStatistics clusters(test::test_device(), dims, mask, 26, 2);
  const std::vector<float> maps(2 * clusters.voxels(), 1.0f);
  const ClusterMaxima m = clusters.maxima(maps, 2, 1.0f);  // equal to the threshold is not above it
  EXPECT_EQ(m.extent, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(m.mass, (std::vector<double>{0.0, 0.0}));
  const ObservedClusters o = clusters.observed(std::vector<float>(clusters.voxels(), 1.0f), 1.0f);
  EXPECT_EQ(o.clusters, 0);
  EXPECT_TRUE(std::all_of(o.extent.begin(), o.extent.end(), [](int64_t e) { return e == 0; }));
  EXPECT_TRUE(std::all_of(o.mass.begin(), o.mass.end(), [](double x) { return x == 0.0; }));
  EXPECT_TRUE(clusters.maxima(std::vector<float>{}, 0, 1.0f).extent.empty());
}

TEST(ClusterStatistics, AMaskOfOneVoxel) {
  for (const Dims dims : {Dims{1, 1, 1}, Dims{5, 4, 3}}) {
    std::vector<uint8_t> mask(grid_size(dims), 0);
    mask[grid_size(dims) / 2] = 1;
    ClusterStatistics clusters(test::test_device(), dims, mask, 26, 4);
    ASSERT_EQ(clusters.voxels(), 1U);
    const ClusterMaxima m = clusters.maxima({2.5f, 0.5f, 1.25f}, 3, 1.0f);
    EXPECT_EQ(m.extent, (std::vector<int64_t>{1, 0, 1}));
    EXPECT_EQ(m.mass, (std::vector<double>{1.5, 0.0, 0.25}));
    const ObservedClusters o = clusters.observed({2.5f}, 1.0f);
    EXPECT_EQ(o.clusters, 1);
    EXPECT_EQ(o.extent[0], 1);
    EXPECT_EQ(o.mass[0], 1.5);
  }
}

TEST(ClusterStatistics, BadArgumentsThrow) {
  Device& device = test::test_device();
  test::expect_bad_grid_arguments_throw<ClusterStatistics>(device);
  const Dims dims{4, 3, 2};
  const std::vector<uint8_t> mask(24, 1);
  // A table of TFCE's kind (every neighbour, voxel-major), or an empty one.
  EXPECT_THROW((ClusterStatistics{device, TfceStatistics::neighbours(dims, mask, 26), 1}), std::invalid_argument);
  EXPECT_THROW((ClusterStatistics{device, MaskNeighbours{}, 1}), std::invalid_argument);
  ClusterStatistics clusters(device, dims, mask, 18, 2);
  EXPECT_THROW(clusters.maxima(std::vector<float>(47), 2, 0.0f), std::invalid_argument);
  EXPECT_THROW(clusters.maxima(std::vector<float>(48), -1, 0.0f), std::invalid_argument);
  EXPECT_THROW(clusters.maxima(std::vector<float>(48), 2, std::nanf("")), std::invalid_argument);
  EXPECT_THROW(clusters.maxima(std::vector<float>(48), 2, std::numeric_limits<float>::infinity()),
               std::invalid_argument);
  EXPECT_THROW(clusters.observed(std::vector<float>(23), 0.0f), std::invalid_argument);
  const DeviceBuffer<float> three(device, 72);
  EXPECT_THROW(clusters.maxima(three, 3, 0.0f), std::invalid_argument);  // more than max_batch
  const DeviceBuffer<float> short_buffer(device, 40);
  EXPECT_THROW(clusters.maxima(short_buffer, 2, 0.0f), std::invalid_argument);
}

// The size of a batch in a real run, scaled down: 64 maps of 40x48x40 in an ellipsoid mask. Prints the time of one
// batch (kernels built by the first).
TEST(ClusterStatistics, ABatchOf64MapsOf40x48x40) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const Dims dims{40, 48, 40};
  const std::vector<uint8_t> mask = ellipsoid_mask(dims);
  const int count = 64;
  const std::vector<float> maps = smooth_maps(dims, mask, count, rng);
  ClusterStatistics clusters(test::test_device(), dims, mask, 26, count);
  const float threshold = 1.0f;
  clusters.maxima(maps, count, threshold);  // builds the kernels
  const auto start = std::chrono::steady_clock::now();
  const ClusterMaxima dev = clusters.maxima(maps, count, threshold);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cout << "one batch of " << count << " maps of 40x48x40 (" << clusters.voxels() << " masked voxels): " << ms
            << " ms, the upload included\n";
  expect_maxima_equal(dev, reference::cluster_maxima(dims, mask, 26, maps, count, threshold));
}

}  // namespace
}  // namespace rtf
