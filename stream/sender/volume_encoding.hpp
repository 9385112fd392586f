// Turning an image's float voxels back into the bytes a scanner would send: the file's own integer type when every
// value fits it exactly (an int16 NIfTI is replayed as int16, bit for bit), float32 otherwise.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "core/image/image.hpp"

namespace rtf::stream {

// The wire datatype for replaying `image`: its source type if that is uint8/int16/uint16/int32/float32 and every
// voxel is exactly representable in it, else float32.
DataType replay_datatype(const Image& image);

// Little-endian bytes of `values` as `type` (uint8, int16, uint16, int32 or float32). Throws
// std::invalid_argument for another type or a value not exactly representable.
std::vector<std::byte> encode_voxels(std::span<const float> values, DataType type);

}  // namespace rtf::stream
