// Seeds: voxels of a mask on the EPI grid, spheres about a world coordinate (hand-counted cases), and bad input.
// ctest-label: unit
#include <gtest/gtest.h>

#include <limits>

#include "core/connectivity/seed.hpp"

namespace rtf {
namespace {

// 11x9x7 grid of 2 mm voxels; voxel (i, j, k) at world (2i - 10, 2j - 8, 2k - 6): voxel (5, 4, 3) at the origin.
ImageHeader grid() {
  ImageHeader h;
  h.dims = {11, 9, 7};
  h.voxel_mm = {2, 2, 2};
  h.affine << 2, 0, 0, -10, 0, 2, 0, -8, 0, 0, 2, -6, 0, 0, 0, 1;
  return h;
}

int32_t index_of(int64_t i, int64_t j, int64_t k) {
  return static_cast<int32_t>((k * 9 + j) * 11 + i);
}

TEST(Seed, SphereCountsVoxelCentresWithinTheRadius) {
  const ImageHeader h = grid();
  // About a voxel centre with 2 mm spacing: distances 0 (1 voxel), 2 (6), 2.83 (12), 3.46 (8), 4 (6).
  EXPECT_EQ(seed_from_sphere(h, {0, 0, 0}, 0.0).size(), 1u);
  EXPECT_EQ(seed_from_sphere(h, {0, 0, 0}, 1.9).size(), 1u);
  EXPECT_EQ(seed_from_sphere(h, {0, 0, 0}, 2.0).size(), 7u);
  EXPECT_EQ(seed_from_sphere(h, {0, 0, 0}, 3.0).size(), 19u);
  EXPECT_EQ(seed_from_sphere(h, {0, 0, 0}, 3.5).size(), 27u);
  EXPECT_EQ(seed_from_sphere(h, {0, 0, 0}, 4.0).size(), 33u);
  EXPECT_EQ(seed_from_sphere(h, {0, 0, 0}, 0.0), std::vector<int32_t>{index_of(5, 4, 3)});
  // Radius 0 off-centre: the voxel containing the point (nearest centre).
  EXPECT_EQ(seed_from_sphere(h, {0.9, -0.9, 1.1}, 0.0), std::vector<int32_t>{index_of(5, 4, 4)});
  // Clipped by the grid: about the corner voxel (0, 0, 0) at (-10, -8, -6), radius 2 keeps 4 voxels.
  const auto corner = seed_from_sphere(h, {-10, -8, -6}, 2.0);
  EXPECT_EQ(corner, (std::vector<int32_t>{index_of(0, 0, 0), index_of(1, 0, 0), index_of(0, 1, 0), index_of(0, 0, 1)}));
  // Outside the grid but within reach of its edge: only the voxels within the radius.
  EXPECT_EQ(seed_from_sphere(h, {-13, -8, -6}, 3.0), std::vector<int32_t>{index_of(0, 0, 0)});
}

TEST(Seed, SphereRejectsBadInput) {
  const ImageHeader h = grid();
  EXPECT_THROW(seed_from_sphere(h, {-20, 0, 0}, 3.0), std::invalid_argument);  // no voxel within reach
  EXPECT_THROW(seed_from_sphere(h, {0, 0, 0}, -1.0), std::invalid_argument);
  EXPECT_THROW(seed_from_sphere(h, {0, 0, 0}, std::numeric_limits<double>::infinity()), std::invalid_argument);
  EXPECT_THROW(seed_from_sphere(h, {std::numeric_limits<double>::quiet_NaN(), 0, 0}, 2.0), std::invalid_argument);
  ImageHeader singular = h;
  singular.affine(1, 1) = 0.0;
  EXPECT_THROW(seed_from_sphere(singular, {0, 0, 0}, 2.0), std::invalid_argument);
}

TEST(Seed, MaskTakesNonzeroVoxelsOnTheGrid) {
  const ImageHeader h = grid();
  Image mask(h, 0.0f);
  mask.at(1, 2, 3) = 1.0f;
  mask.at(10, 8, 6) = -2.0f;                                   // any nonzero value
  mask.at(4, 4, 4) = std::numeric_limits<float>::quiet_NaN();  // NaN is not a seed voxel
  EXPECT_EQ(seed_from_mask(mask, h), (std::vector<int32_t>{index_of(1, 2, 3), index_of(10, 8, 6)}));
  EXPECT_THROW(seed_from_mask(Image(h, 0.0f), h), std::invalid_argument);  // empty
  ImageHeader other = h;
  other.affine(2, 3) = -4.0;  // same dims, shifted by one voxel
  EXPECT_THROW(seed_from_mask(Image(other, 1.0f), h), std::invalid_argument);
  ImageHeader smaller = h;
  smaller.dims = {11, 9, 6};
  EXPECT_THROW(seed_from_mask(Image(smaller, 1.0f), h), std::invalid_argument);
  ImageHeader four_d = h;
  four_d.num_volumes = 2;
  EXPECT_THROW(seed_from_mask(Image(four_d, 1.0f), h), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
