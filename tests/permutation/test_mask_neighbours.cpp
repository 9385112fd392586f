// mask_neighbours against a plain reference (every masked voxel's neighbours looked up one by one), on a small grid and
// on one large enough to be filled in z slabs on several threads; random masks from the test seed.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/permutation/mask_neighbours.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

// Offsets in loop order (dz outermost, dx innermost, each from -1 to 1), those within the connectivity's reach;
// kPreceding keeps those before the voxel in the grid (x fastest).
std::vector<std::array<int, 3>> reference_offsets(int connectivity, NeighbourSet set) {
  std::vector<std::array<int, 3>> out;
  for (int dz = -1; dz <= 1; ++dz) {
    for (int dy = -1; dy <= 1; ++dy) {
      for (int dx = -1; dx <= 1; ++dx) {
        const int steps = std::abs(dx) + std::abs(dy) + std::abs(dz);
        if (steps == 0 || (connectivity == 6 && steps > 1) || (connectivity == 18 && steps > 2)) continue;
        const long linear = dx + 3L * (dy + 3L * dz);  // < 0: before the voxel
        if (set == NeighbourSet::kPreceding && linear > 0) continue;
        out.push_back({dx, dy, dz});
      }
    }
  }
  return out;
}

void check_against_reference(std::array<int64_t, 3> dims, double fill, uint32_t seed) {
  const auto [nx, ny, nz] = dims;
  std::mt19937 rng(seed);
  std::bernoulli_distribution inside(fill);
  std::vector<uint8_t> mask(static_cast<size_t>(nx * ny * nz));
  for (auto& m : mask) m = inside(rng) ? 1 : 0;
  // The masked voxels' coordinates in mask order, and a lookup of a position's mask index (-1 outside).
  std::vector<std::array<int64_t, 3>> coords;
  std::vector<int32_t> index(mask.size(), -1);
  for (int64_t z = 0; z < nz; ++z) {
    for (int64_t y = 0; y < ny; ++y) {
      for (int64_t x = 0; x < nx; ++x) {
        const auto i = static_cast<size_t>(x + nx * (y + ny * z));
        if (mask[i] == 0) continue;
        index[i] = static_cast<int32_t>(coords.size());
        coords.push_back({x, y, z});
      }
    }
  }
  const auto index_at = [&](int64_t a, int64_t b, int64_t c) -> int32_t {
    if (a < 0 || b < 0 || c < 0 || a >= nx || b >= ny || c >= nz) return -1;
    return index[static_cast<size_t>(a + nx * (b + ny * c))];
  };
  for (const int connectivity : {6, 18, 26}) {
    for (const NeighbourSet set : {NeighbourSet::kAll, NeighbourSet::kPreceding}) {
      for (const NeighbourLayout layout : {NeighbourLayout::kVoxelMajor, NeighbourLayout::kNeighbourMajor}) {
        SCOPED_TRACE(::testing::Message() << nx << "x" << ny << "x" << nz << " connectivity " << connectivity
                                          << " preceding " << (set == NeighbourSet::kPreceding) << " voxel-major "
                                          << (layout == NeighbourLayout::kVoxelMajor));
        const MaskNeighbours got = mask_neighbours(dims, mask, connectivity, set, layout, "test");
        const std::vector<std::array<int, 3>> offsets = reference_offsets(connectivity, set);
        ASSERT_EQ(got.voxels, coords.size());
        ASSERT_EQ(got.offsets, offsets.size());
        ASSERT_EQ(got.table.size(), got.offsets * got.voxels);
        for (size_t v = 0; v < coords.size(); ++v) {
          const auto [x, y, z] = coords[v];
          for (size_t k = 0; k < offsets.size(); ++k) {
            const int32_t expected = index_at(x + offsets[k][0], y + offsets[k][1], z + offsets[k][2]);
            const size_t at = layout == NeighbourLayout::kVoxelMajor ? v * offsets.size() + k : k * coords.size() + v;
            ASSERT_EQ(got.table[at], expected) << "voxel " << x << "," << y << "," << z << " offset " << k;
          }
        }
      }
    }
  }
}

TEST(MaskNeighbours, SmallGridEqualsTheReference) {
  const uint32_t seed = test::test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  check_against_reference({7, 5, 4}, 0.6, seed);
}

TEST(MaskNeighbours, GridFilledInSlabsEqualsTheReference) {
  const uint32_t seed = test::test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  check_against_reference({67, 71, 59}, 0.7, seed);  // 280,683 voxels: above the threaded fill's 2^18
}

TEST(MaskNeighbours, BadInputIsRefused) {
  const std::vector<uint8_t> mask(24, 1), empty(24, 0);
  EXPECT_THROW(mask_neighbours({2, 3, 4}, mask, 8, NeighbourSet::kAll, NeighbourLayout::kVoxelMajor, "t"),
               std::invalid_argument);
  EXPECT_THROW(mask_neighbours({2, 3, 5}, mask, 6, NeighbourSet::kAll, NeighbourLayout::kVoxelMajor, "t"),
               std::invalid_argument);
  EXPECT_THROW(mask_neighbours({2, 3, 4}, empty, 6, NeighbourSet::kAll, NeighbourLayout::kVoxelMajor, "t"),
               std::invalid_argument);
}

}  // namespace
}  // namespace rtf
