// Voxels per work-item for kernels written over floatN/doubleN lanes: 1 on GPUs (one voxel per work-item, the
// hardware groups them into warps); on CPU devices the native float vector width (4, 8 or 16), because PoCL runs a
// work-item's arithmetic scalar unless the kernel spells out the vectors (measured: docs/algorithms/cca.md, glm.md).
#pragma once

#include "core/device/device.hpp"

namespace rtf {

int preferred_vector_width(const Device& device);

}  // namespace rtf
