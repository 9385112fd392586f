// ctest-label: gpu
// TFCE (core/permutation/tfce.hpp) against the flood-fill reference: odd grids with random masks and fresh random
// smooth maps (seed printed; RTF_TEST_SEED replays it), 6 and 26 connectivity, FSL's E = 0.5, H = 2 and E = 1, H = 1.5,
// batches larger than max_batch, dh = the first map's maximum / 100 (as randomise -T) and a finer one that takes more
// than 256 thresholds. Tolerance: per voxel and per map maximum, 1e-4 of the map's largest reference TFCE. The clusters
// are exact on both sides (the same float thresholds and integer extents), so what differs is only the device's float
// accumulation of ~100 terms (relative error ~1e-6 expected, the largest seen is printed). Hand-made cases with known
// answers: one voxel of 2 with dh 0.5, two blobs, corners that only 26-connectivity joins; maps with nothing at or
// above dh give 0; bad arguments throw; a batch of 64 maps of 40x48x40 is timed.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <random>
#include <string>

#include "core/permutation/tfce.hpp"
#include "core/reference/tfce_reference.hpp"
#include "tests/permutation/grid_arguments.hpp"
#include "tests/support/random_maps.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

using test::ellipsoid_mask;
using test::random_mask;
using test::smooth_maps;
using test::test_seed;

using Dims = test::GridDims;
constexpr double kTolerance = 1e-4;  // of the map's largest TFCE

// The random maps' standard deviation: clusters of many shapes and sizes form and merge across thresholds.
constexpr double kMapSd = 2.0;

std::vector<float> map_of(const std::vector<float>& maps, size_t voxels, int b) {
  const auto first = maps.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(b) * voxels);
  return {first, first + static_cast<std::ptrdiff_t>(voxels)};
}

// Per voxel within kTolerance of the reference's largest value; returns the largest error relative to it.
double expect_tfce_near(const std::vector<float>& dev, const std::vector<double>& ref, const std::string& what) {
  EXPECT_EQ(dev.size(), ref.size()) << what;
  if (dev.size() != ref.size()) return 0.0;
  const double top = ref.empty() ? 0.0 : *std::max_element(ref.begin(), ref.end());
  double worst = 0.0;
  for (size_t v = 0; v < ref.size(); ++v) {
    const double error = std::abs(static_cast<double>(dev[v]) - ref[v]);
    EXPECT_LE(error, kTolerance * top + 1e-30) << what << ", voxel " << v << ": " << dev[v] << " vs " << ref[v];
    if (error > kTolerance * top) return worst;  // one message per map
    if (top > 0.0) worst = std::max(worst, error / top);
  }
  return worst;
}

double expect_maxima_near(const std::vector<float>& dev, const std::vector<double>& ref) {
  EXPECT_EQ(dev.size(), ref.size());
  double worst = 0.0;
  for (size_t b = 0; b < std::min(dev.size(), ref.size()); ++b) {
    const double error = std::abs(static_cast<double>(dev[b]) - ref[b]);
    EXPECT_LE(error, kTolerance * ref[b]) << "map " << b << ": " << dev[b] << " vs " << ref[b];
    if (ref[b] > 0.0) worst = std::max(worst, error / ref[b]);
  }
  return worst;
}

TEST(TfceStatistics, RandomMapsMatchTheReference) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  double worst = 0.0;
  for (const Dims dims : {Dims{13, 11, 9}, Dims{21, 17, 15}}) {
    const std::vector<uint8_t> mask = random_mask(dims, rng, 0.85);
    for (const int connectivity : {6, 26}) {
      for (const auto& [E, H] : {std::pair{0.5, 2.0}, std::pair{1.0, 1.5}}) {
        TfceStatistics tfce(test::test_device(), dims, mask, connectivity, 3, E, H);
        const int count = 7;  // three launch sequences: 3 + 3 + 1
        const std::vector<float> maps = smooth_maps(dims, mask, count, rng, kMapSd);
        const size_t voxels = tfce.voxels();
        const float first_max = *std::max_element(maps.begin(), maps.begin() + static_cast<std::ptrdiff_t>(voxels));
        // As randomise -T: the first (observed) map's maximum / 100; and finer steps, past the 256 local levels.
        for (const float dh : {first_max / 100.0f, first_max / 300.0f}) {
          SCOPED_TRACE(::testing::Message() << dims[0] << "x" << dims[1] << "x" << dims[2] << ", connectivity "
                                            << connectivity << ", E " << E << ", H " << H << ", dh " << dh);
          worst = std::max(worst,
                           expect_maxima_near(tfce.maxima(maps, count, dh),
                                              reference::tfce_maxima(dims, mask, connectivity, maps, count, dh, E, H)));
          for (const int b : {0, 4}) {
            const std::vector<float> map = map_of(maps, voxels, b);
            worst = std::max(
                worst, expect_tfce_near(tfce.tfce(map, dh), reference::tfce(dims, mask, connectivity, map, dh, E, H),
                                        "map " + std::to_string(b)));
          }
        }
      }
    }
  }
  std::cout << "largest error relative to the map's largest TFCE: " << worst << "\n";
}

// The same map twice gives the same bits, and maps on the device give what the host overload gives.
TEST(TfceStatistics, RepeatableAndTheSameFromTheDevice) {
  const Dims dims{15, 13, 11};
  std::mt19937 rng(11);
  const std::vector<uint8_t> mask = random_mask(dims, rng, 0.9);
  TfceStatistics tfce(test::test_device(), dims, mask, 26, 4);
  const std::vector<float> maps = smooth_maps(dims, mask, 4, rng, kMapSd);
  const std::vector<float> first = map_of(maps, tfce.voxels(), 0);
  const float dh = *std::max_element(first.begin(), first.end()) / 100.0f;
  EXPECT_EQ(tfce.tfce(first, dh), tfce.tfce(first, dh));
  const std::vector<float> host = tfce.maxima(maps, 4, dh);
  DeviceBuffer<float> buffer(test::test_device(), maps.size());
  buffer.write(test::test_device().queue(), maps);
  EXPECT_EQ(tfce.maxima(buffer, 4, dh), host);
  EXPECT_EQ(tfce.maxima(buffer, 2, dh), std::vector<float>(host.begin(), host.begin() + 2));
  // Made from a shared neighbour table (randomise: one for every device), the same bits.
  const MaskNeighbours table = TfceStatistics::neighbours(dims, mask, 26);
  TfceStatistics shared(test::test_device(), table, 4);
  EXPECT_EQ(shared.voxels(), tfce.voxels());
  EXPECT_EQ(shared.maxima(maps, 4, dh), host);
  EXPECT_EQ(shared.tfce(first, dh), tfce.tfce(first, dh));
}

// One voxel of 2 with dh 0.5: thresholds 0.5, 1, 1.5, 2 (t >= h), extent 1 each: 0.5 (0.25 + 1 + 2.25 + 4) = 3.75.
TEST(TfceStatistics, AnIsolatedVoxel) {
  const Dims dims{5, 5, 5};
  std::vector<uint8_t> mask(125, 1);
  for (const int connectivity : {6, 26}) {
    TfceStatistics tfce(test::test_device(), dims, mask, connectivity, 2);
    std::vector<float> map(125, -1.0f);
    map[62] = 2.0f;  // the centre
    const std::vector<float> t = tfce.tfce(map, 0.5f);
    EXPECT_FLOAT_EQ(t[62], 3.75f) << connectivity;
    EXPECT_EQ(std::count(t.begin(), t.end(), 0.0f), 124) << connectivity;
    std::vector<float> two = map;
    two.insert(two.end(), map.begin(), map.end());
    two[125 + 62] = 1.0f;  // 0.5 (0.25 + 1)
    const std::vector<float> m = tfce.maxima(two, 2, 0.5f);
    EXPECT_FLOAT_EQ(m[0], 3.75f);
    EXPECT_FLOAT_EQ(m[1], 0.625f);
  }
  // A mask of one voxel.
  std::vector<uint8_t> one(125, 0);
  one[7] = 1;
  TfceStatistics single(test::test_device(), dims, one, 26, 1);
  EXPECT_FLOAT_EQ(single.tfce({2.0f}, 0.5f)[0], 3.75f);
  EXPECT_FLOAT_EQ(single.maxima({2.0f}, 1, 0.5f)[0], 3.75f);
}

// A line of ten voxels: a blob of four voxels of 1, a gap, a blob 1 2 1, a voxel below dh and a negative one.
TEST(TfceStatistics, TwoBlobs) {
  const std::vector<uint8_t> mask(10, 1);
  const std::vector<float> map{1, 1, 1, 1, 0, 1, 2, 1, 0.4f, -3};
  const float dh = 0.5f;
  const double r3 = std::sqrt(3.0);
  // E = 0.5, H = 2: at h = 0.5 and 1 the blobs have extents 4 and 3; at 1.5 and 2 only the peak, extent 1.
  const std::vector<double> fsl{2 * 0.625,  2 * 0.625,          2 * 0.625,  2 * 0.625, 0,
                                r3 * 0.625, r3 * 0.625 + 3.125, r3 * 0.625, 0,         0};
  // E = 1, H = 1: extent * h * dh.
  const std::vector<double> linear{3, 3, 3, 3, 0, 2.25, 4, 2.25, 0, 0};
  for (const auto& [E, H, expected] : {std::tuple{0.5, 2.0, fsl}, std::tuple{1.0, 1.0, linear}}) {
    TfceStatistics tfce(test::test_device(), {10, 1, 1}, mask, 26, 1, E, H);
    const std::vector<float> t = tfce.tfce(map, dh);
    for (size_t v = 0; v < 10; ++v) EXPECT_NEAR(t[v], expected[v], 1e-6 * expected[v]) << "E " << E << ", v " << v;
    EXPECT_NEAR(tfce.maxima(map, 1, dh)[0], expected[6], 1e-6 * expected[6]);
    const std::vector<double> ref = reference::tfce({10, 1, 1}, mask, 26, map, dh, E, H);
    for (size_t v = 0; v < 10; ++v) EXPECT_NEAR(ref[v], expected[v], 1e-12) << "reference, E " << E << ", v " << v;
  }
  // A voxel outside the mask splits a line that would be one blob: 1 1 | 1 -> extents 2 and 1.
  TfceStatistics split(test::test_device(), {4, 1, 1}, {1, 1, 0, 1}, 26, 1);
  const std::vector<float> t = split.tfce({1, 1, 1}, 1.0f);  // one threshold, h = 1: e^0.5 * 1 * 1
  EXPECT_FLOAT_EQ(t[0], std::sqrt(2.0f));
  EXPECT_FLOAT_EQ(t[2], 1.0f);
}

// Two voxels of 1 touching at a corner, and two touching at a face, in a 3x3x3 grid, dh 0.5: joined, the extent is 2
// at h = 0.5 and 1 (TFCE 0.625 sqrt 2), apart 1 (0.625).
TEST(TfceStatistics, ConnectivityDecidesWhetherCornersJoin) {
  const Dims dims{3, 3, 3};
  const std::vector<uint8_t> mask(27, 1);
  std::vector<float> corner(27, 0.0f), face(27, 0.0f);
  corner[0] = corner[13] = 1.0f;  // (0, 0, 0) and (1, 1, 1): a corner
  face[4] = face[13] = 1.0f;      // (1, 1, 0) and (1, 1, 1): a face
  const double joined = 0.625 * std::sqrt(2.0), apart = 0.625;
  for (const int connectivity : {6, 26}) {
    TfceStatistics tfce(test::test_device(), dims, mask, connectivity, 2);
    const std::vector<float> c = tfce.tfce(corner, 0.5f), f = tfce.tfce(face, 0.5f);
    EXPECT_NEAR(c[0], connectivity == 26 ? joined : apart, 1e-6) << connectivity;
    EXPECT_NEAR(c[13], connectivity == 26 ? joined : apart, 1e-6) << connectivity;
    EXPECT_NEAR(f[4], joined, 1e-6) << connectivity;
    EXPECT_NEAR(f[13], joined, 1e-6) << connectivity;
    std::vector<float> both = corner;
    both.insert(both.end(), face.begin(), face.end());
    const std::vector<float> m = tfce.maxima(both, 2, 0.5f);
    EXPECT_NEAR(m[0], connectivity == 26 ? joined : apart, 1e-6) << connectivity;
    EXPECT_NEAR(m[1], joined, 1e-6) << connectivity;
  }
}

TEST(TfceStatistics, NothingAtOrAboveDhGivesZero) {
  const Dims dims{7, 5, 3};
  std::mt19937 rng(5);
  const std::vector<uint8_t> mask = random_mask(dims, rng, 0.7);
  TfceStatistics tfce(test::test_device(), dims, mask, 26, 2);
  const size_t voxels = tfce.voxels();
  std::vector<float> maps(2 * voxels);
  for (size_t v = 0; v < voxels; ++v) {
    maps[v] = -1.0f - static_cast<float>(v);  // all negative
    maps[voxels + v] = 0.25f;                 // below dh
  }
  EXPECT_EQ(tfce.maxima(maps, 2, 0.5f), (std::vector<float>{0.0f, 0.0f}));
  for (const int b : {0, 1}) {
    const std::vector<float> t = tfce.tfce(map_of(maps, voxels, b), 0.5f);
    EXPECT_TRUE(std::all_of(t.begin(), t.end(), [](float x) { return x == 0.0f; })) << b;
  }
  EXPECT_TRUE(tfce.maxima(std::vector<float>{}, 0, 0.5f).empty());
  // A negative map next to a positive one: only the positive voxels count.
  std::vector<float> mixed = map_of(maps, voxels, 0);
  mixed[0] = 2.0f;
  EXPECT_FLOAT_EQ(tfce.maxima(mixed, 1, 0.5f)[0], 3.75f);
}

TEST(TfceStatistics, BadArgumentsThrow) {
  Device& device = test::test_device();
  test::expect_bad_grid_arguments_throw<TfceStatistics>(device);
  const Dims dims{4, 3, 2};
  const std::vector<uint8_t> mask(24, 1);
  EXPECT_THROW((TfceStatistics{device, dims, mask, 26, 1, -0.5, 2.0}), std::invalid_argument);
  EXPECT_THROW((TfceStatistics{device, dims, mask, 26, 1, 0.5, std::nan("")}), std::invalid_argument);
  EXPECT_THROW((TfceStatistics{device, dims, mask, 26, 1, std::numeric_limits<double>::infinity(), 2.0}),
               std::invalid_argument);
  // A table of the clusters' kind (preceding neighbours, neighbour-major), or an empty one.
  EXPECT_THROW(
      (TfceStatistics{
          device, mask_neighbours(dims, mask, 26, NeighbourSet::kPreceding, NeighbourLayout::kNeighbourMajor, "t"), 1}),
      std::invalid_argument);
  EXPECT_THROW((TfceStatistics{device, MaskNeighbours{}, 1}), std::invalid_argument);
  TfceStatistics tfce(device, dims, mask, 18, 2);
  EXPECT_THROW(tfce.maxima(std::vector<float>(47), 2, 0.1f), std::invalid_argument);
  EXPECT_THROW(tfce.maxima(std::vector<float>(48), -1, 0.1f), std::invalid_argument);
  for (const float dh : {0.0f, -0.1f, std::nanf(""), std::numeric_limits<float>::infinity()}) {
    EXPECT_THROW(tfce.maxima(std::vector<float>(48), 2, dh), std::invalid_argument) << dh;
    EXPECT_THROW(tfce.tfce(std::vector<float>(24), dh), std::invalid_argument) << dh;
  }
  EXPECT_THROW(tfce.tfce(std::vector<float>(23), 0.1f), std::invalid_argument);
  const DeviceBuffer<float> three(device, 72);
  EXPECT_THROW(tfce.maxima(three, 3, 0.1f), std::invalid_argument);  // more than max_batch
  const DeviceBuffer<float> short_buffer(device, 40);
  EXPECT_THROW(tfce.maxima(short_buffer, 2, 0.1f), std::invalid_argument);
  // More thresholds than kMaxThresholds (and an infinite value): refused, and the next call is unaffected.
  std::vector<float> tall(24, 0.0f);
  tall[3] = 2.0f * TfceStatistics::kMaxThresholds;
  EXPECT_THROW(tfce.tfce(tall, 1.0f), std::invalid_argument);
  tall[3] = std::numeric_limits<float>::infinity();
  EXPECT_THROW(tfce.tfce(tall, 1.0f), std::invalid_argument);
  tall[3] = 2.0f;
  EXPECT_FLOAT_EQ(tfce.tfce(tall, 0.5f)[3], 3.75f);
}

// The size of a batch in a real run, scaled down: 64 maps of 40x48x40 in an ellipsoid mask, 100 thresholds (dh = the
// batch's largest value / 100). Prints the time of one batch (kernels built by the first), the maps already on the
// device as the permutation kernel leaves them, and checks a few maps against the reference.
TEST(TfceStatistics, ABatchOf64MapsOf40x48x40) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const Dims dims{40, 48, 40};
  const std::vector<uint8_t> mask = ellipsoid_mask(dims);
  const int count = 64;
  const std::vector<float> maps = smooth_maps(dims, mask, count, rng, kMapSd);
  Device& device = test::test_device();
  TfceStatistics tfce(device, dims, mask, 26, count);
  const float dh = *std::max_element(maps.begin(), maps.end()) / 100.0f;
  DeviceBuffer<float> buffer(device, maps.size());
  buffer.write(device.queue(), maps);
  tfce.maxima(buffer, count, dh);  // builds the kernels
  const auto start = std::chrono::steady_clock::now();
  const std::vector<float> dev = tfce.maxima(buffer, count, dh);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cout << "one batch of " << count << " maps of 40x48x40 (" << tfce.voxels()
            << " masked voxels), 100 thresholds: " << ms << " ms\n";
  const int checked = 4;
  const std::vector<float> few(maps.begin(), maps.begin() + static_cast<std::ptrdiff_t>(checked * tfce.voxels()));
  expect_maxima_near(std::vector<float>(dev.begin(), dev.begin() + checked),
                     reference::tfce_maxima(dims, mask, 26, few, checked, dh, 0.5, 2.0));
}

}  // namespace
}  // namespace rtf
