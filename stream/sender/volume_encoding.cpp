// Float voxels -> little-endian wire bytes of an integer or float32 datatype.
#include "stream/sender/volume_encoding.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace rtf::stream {

namespace {

// Exactly representable in T: within T's range (which NaN never is) and unchanged by the round trip through T. The
// conversion is defined once the range holds, and the test compiles to a few vector instructions per voxel (the scanner
// watch encodes a 104 x 104 x 72 volume per TR).
template <typename T>
bool fits(float v) {
  if constexpr (std::is_floating_point_v<T>) {
    return true;
  } else {
    constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
    constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
    const double d = static_cast<double>(v);
    return d >= lo && d <= hi && static_cast<double>(static_cast<T>(v)) == d;
  }
}

template <typename T>
bool all_fit(std::span<const float> values) {
  bool ok = true;
  for (float v : values) ok &= fits<T>(v);  // no early exit: the loop vectorises
  return ok;
}

template <typename T>
void encode(std::span<const float> values, std::vector<std::byte>& out) {
  static_assert(std::endian::native == std::endian::little, "wire format is little-endian");
  if (!all_fit<T>(values)) {
    const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !fits<T>(v); });
    throw std::invalid_argument("voxel " + std::to_string(bad - values.begin()) + " value " + std::to_string(*bad) +
                                " is not representable in the wire datatype");
  }
  out.resize(values.size() * sizeof(T));
  for (size_t i = 0; i < values.size(); ++i) {
    const T v = static_cast<T>(values[i]);
    std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
  }
}

}  // namespace

DataType replay_datatype(const Image& image) {
  const std::span<const float> all(image.data());
  switch (image.header().source_type) {
    case DataType::kUint8:
      return all_fit<uint8_t>(all) ? DataType::kUint8 : DataType::kFloat32;
    case DataType::kInt16:
      return all_fit<int16_t>(all) ? DataType::kInt16 : DataType::kFloat32;
    case DataType::kUint16:
      return all_fit<uint16_t>(all) ? DataType::kUint16 : DataType::kFloat32;
    case DataType::kInt32:
      return all_fit<int32_t>(all) ? DataType::kInt32 : DataType::kFloat32;
    default:
      return DataType::kFloat32;
  }
}

std::vector<std::byte> encode_voxels(std::span<const float> values, DataType type) {
  std::vector<std::byte> out;
  switch (type) {
    case DataType::kUint8:
      encode<uint8_t>(values, out);
      break;
    case DataType::kInt16:
      encode<int16_t>(values, out);
      break;
    case DataType::kUint16:
      encode<uint16_t>(values, out);
      break;
    case DataType::kInt32:
      encode<int32_t>(values, out);
      break;
    case DataType::kFloat32:
      encode<float>(values, out);
      break;
    default:
      throw std::invalid_argument("cannot replay voxels as " + to_string(type));
  }
  return out;
}

}  // namespace rtf::stream
