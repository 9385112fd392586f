// Per-voxel values of a list of voxels written as a 3D NIfTI (the maps of randomise, connectome and the GLM's
// permutation test).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/image/image.hpp"

namespace rtf {

// Writes a 3D float NIfTI on `grid` with values[k] at voxel voxels[k] (full-grid index, x fastest) and 0 elsewhere.
void write_voxel_values(const std::string& path, const ImageHeader& grid, const std::vector<int64_t>& voxels,
                        const std::vector<double>& values);

}  // namespace rtf
