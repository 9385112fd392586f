// Type-dispatched voxel decoding to float32 with byte swapping, scaling and range clamping.
#include "core/image/voxel_decode.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace rtf {
namespace {

float to_float(double x) {
  if (x > FLT_MAX) return std::numeric_limits<float>::infinity();
  if (x < -FLT_MAX) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(x);  // NaN stays NaN
}

template <typename T>
void decode(const std::byte* src, std::span<float> out, const VoxelDecoding& how) {
  const bool scale = how.slope != 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    std::byte b[sizeof(T)];
    std::memcpy(b, src + i * sizeof(T), sizeof(T));
    if (how.byte_swapped) std::reverse(b, b + sizeof(T));
    T v;
    std::memcpy(&v, b, sizeof(T));
    if constexpr (std::is_same_v<T, float>) {
      out[i] = scale ? to_float(static_cast<double>(v) * how.slope + how.inter) : v;
    } else {
      const auto x = static_cast<double>(v);
      out[i] = to_float(scale ? x * how.slope + how.inter : x);
    }
  }
}

}  // namespace

void decode_voxels(DataType type, std::span<const std::byte> raw, std::span<float> out, const VoxelDecoding& how) {
  const int bytes = bytes_per_voxel(type);
  if (bytes == 0)
    throw std::invalid_argument(fmt::format("decode_voxels: unknown datatype code {}", static_cast<int>(type)));
  if (raw.size() < out.size() * static_cast<size_t>(bytes)) {
    throw std::invalid_argument(
        fmt::format("decode_voxels: {} bytes for {} voxels of {}", raw.size(), out.size(), to_string(type)));
  }
  const std::byte* src = raw.data();
  switch (type) {
    case DataType::kUint8:
      return decode<uint8_t>(src, out, how);
    case DataType::kInt8:
      return decode<int8_t>(src, out, how);
    case DataType::kInt16:
      return decode<int16_t>(src, out, how);
    case DataType::kUint16:
      return decode<uint16_t>(src, out, how);
    case DataType::kInt32:
      return decode<int32_t>(src, out, how);
    case DataType::kUint32:
      return decode<uint32_t>(src, out, how);
    case DataType::kInt64:
      return decode<int64_t>(src, out, how);
    case DataType::kUint64:
      return decode<uint64_t>(src, out, how);
    case DataType::kFloat32:
      return decode<float>(src, out, how);
    case DataType::kFloat64:
      return decode<double>(src, out, how);
  }
}

}  // namespace rtf
