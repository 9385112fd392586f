// Raw voxels (any DataType, either byte order) to float32, optionally scaled as NIfTI's
// scl_slope/scl_inter. Shared by the NIfTI reader and the session journal.
#pragma once

#include <cstddef>
#include <span>

#include "core/image/image.hpp"

namespace rtf {

struct VoxelDecoding {
  bool byte_swapped = false;  // stored in the other byte order than this machine's
  double slope = 0.0;         // 0: no scaling (NIfTI's convention)
  double inter = 0.0;
};

// Decodes out.size() voxels of `type` from `raw` (which holds at least out.size() * bytes_per_voxel(type)
// bytes). Values beyond float range become +-inf; NaN stays NaN; unscaled float32 is copied bit for bit.
// Throws std::invalid_argument for an unknown datatype or a short `raw`.
void decode_voxels(DataType type, std::span<const std::byte> raw, std::span<float> out, const VoxelDecoding& how = {});

}  // namespace rtf
