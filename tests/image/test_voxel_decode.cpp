// decode_voxels: every datatype to float, byte swapping, NIfTI scaling, out-of-range doubles, bad input.
// ctest-label: unit
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/image/voxel_decode.hpp"

namespace rtf {
namespace {

template <typename T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST(VoxelDecode, IntegerTypesAndSwapAndScaling) {
  std::vector<float> out(3);
  decode_voxels(DataType::kInt16, bytes_of<int16_t>({-3, 0, 32767}), out);
  EXPECT_EQ(out, (std::vector<float>{-3, 0, 32767}));
  decode_voxels(DataType::kUint8, bytes_of<uint8_t>({0, 7, 255}), out);
  EXPECT_EQ(out, (std::vector<float>{0, 7, 255}));
  // 0x0102 stored big-endian reads as 258 when swapped.
  const std::vector<std::byte> be = {std::byte{1}, std::byte{2}};
  std::vector<float> one(1);
  decode_voxels(DataType::kUint16, be, one, {.byte_swapped = true});
  EXPECT_EQ(one[0], 258.0f);
  decode_voxels(DataType::kInt32, bytes_of<int32_t>({10, -20, 30}), out, {.slope = 0.5, .inter = 1.0});
  EXPECT_EQ(out, (std::vector<float>{6, -9, 16}));
}

TEST(VoxelDecode, FloatsKeepBitsAndClampRange) {
  std::vector<float> out(3);
  decode_voxels(DataType::kFloat32, bytes_of<float>({-0.0f, std::numeric_limits<float>::quiet_NaN(), 1.5f}), out);
  EXPECT_TRUE(std::signbit(out[0]));
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_EQ(out[2], 1.5f);
  decode_voxels(DataType::kFloat64, bytes_of<double>({1e300, -1e300, 2.25}), out);
  EXPECT_EQ(out[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(out[1], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(out[2], 2.25f);
}

TEST(VoxelDecode, RejectsShortInputAndUnknownType) {
  std::vector<float> out(3);
  EXPECT_THROW(decode_voxels(DataType::kInt16, bytes_of<int16_t>({1, 2}), out), std::invalid_argument);
  EXPECT_THROW(decode_voxels(static_cast<DataType>(17), bytes_of<int32_t>({1, 2, 3}), out), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
