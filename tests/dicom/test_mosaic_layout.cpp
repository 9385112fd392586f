// Siemens mosaic unpacking (core/dicom/mosaic_layout.hpp): each voxel lands where dcm2niix puts it, NIfTI (x, y, k) =
// mosaic row tileRow(k) * tile_rows + tile_rows - 1 - y, column tileCol(k) * tile_columns + x (the mapping found by
// comparing dcm2niix's output with pyneal's real Siemens mosaics voxel by voxel; the end-to-end comparison comes with
// the DICOM reader), on odd and non-square tiles and slice counts that leave tiles empty; packing is its exact inverse
// and leaves unused tiles 0; bad shapes are refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "core/dicom/mosaic_layout.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf::dicom {
namespace {

TEST(MosaicLayout, UnpackPutsEachPixelWhereDcm2niixDoes) {
  std::mt19937 rng(static_cast<uint32_t>(test::test_seed()));
  std::uniform_int_distribution<int> value(-32768, 32767);
  for (const auto& [slices, tile_rows, tile_columns] :
       std::vector<std::array<int, 3>>{{1, 3, 5}, {17, 7, 5}, {18, 64, 64}, {25, 4, 6}, {10, 5, 3}}) {
    SCOPED_TRACE(::testing::Message() << slices << " slices of " << tile_rows << " x " << tile_columns);
    const int side = mosaic_tiles_per_side(slices);
    const MosaicShape shape{side * tile_rows, side * tile_columns, slices};
    std::vector<int16_t> mosaic(static_cast<size_t>(shape.rows) * static_cast<size_t>(shape.columns));
    for (int16_t& v : mosaic) v = static_cast<int16_t>(value(rng));
    const std::vector<int16_t> volume = unpack_mosaic<int16_t>(mosaic, shape);
    ASSERT_EQ(volume.size(), static_cast<size_t>(slices * tile_rows * tile_columns));
    for (int k = 0; k < slices; ++k) {
      for (int y = 0; y < tile_rows; ++y) {
        for (int x = 0; x < tile_columns; ++x) {
          const int row = (k / side) * tile_rows + tile_rows - 1 - y, column = (k % side) * tile_columns + x;
          ASSERT_EQ(volume[static_cast<size_t>((k * tile_rows + y) * tile_columns + x)],
                    mosaic[static_cast<size_t>(row * shape.columns + column)]);
        }
      }
    }
    // Packing inverts it; the tiles past the last slice stay 0.
    const std::vector<int16_t> packed = pack_mosaic<int16_t>(volume, shape);
    const std::vector<int16_t> again = unpack_mosaic<int16_t>(packed, shape);
    EXPECT_EQ(again, volume);
    for (int t = slices; t < side * side; ++t) {
      for (int r = 0; r < tile_rows; ++r) {
        for (int c = 0; c < tile_columns; ++c) {
          ASSERT_EQ(
              packed[static_cast<size_t>(((t / side) * tile_rows + r) * shape.columns + (t % side) * tile_columns + c)],
              0);
        }
      }
    }
  }
}

TEST(MosaicLayout, RefusesShapesThatAreNotWholeTiles) {
  const std::vector<float> pixels(320 * 320, 1.0f);
  EXPECT_THROW(unpack_mosaic<float>(pixels, {320, 320, 0}), std::invalid_argument);
  EXPECT_THROW(unpack_mosaic<float>(pixels, {320, 320, 37}), std::invalid_argument);  // 7 x 7 tiles do not divide 320
  EXPECT_THROW(unpack_mosaic<float>(pixels, {320, 321, 18}), std::invalid_argument);  // pixel count mismatch
  EXPECT_THROW(unpack_mosaic<float>(std::vector<float>(4), {2, 2, 9}), std::invalid_argument);  // tiles < 1 pixel
  EXPECT_THROW(pack_mosaic<float>(std::vector<float>(10), {320, 320, 18}), std::invalid_argument);
  EXPECT_EQ(unpack_mosaic<float>(pixels, {320, 320, 18}).size(), size_t{18 * 64 * 64});
}

}  // namespace
}  // namespace rtf::dicom
