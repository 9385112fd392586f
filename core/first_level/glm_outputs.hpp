// What the glm command's modes (core/first_level/glm_command.hpp) write alike: contrast names made file-name-safe,
// the design as a TSV, a statistic map's summary and the mask as an image.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/design/design_matrix.hpp"
#include "core/image/image.hpp"

namespace rtf {

// Letters and digits kept, '-' -> "Minus", '+' -> "Plus", others dropped ("contrast" when nothing is left).
std::string file_safe(const std::string& name);

// PREFIX_design.tsv: the columns' names, then one row per volume (%.8g).
void write_design(const std::filesystem::path& path, const DesignMatrix& design);

// Voxels of a statistic map above `threshold` (absolute value for t) and its largest value, over finite voxels.
std::pair<int64_t, double> summarize(const Image& map, double threshold, bool absolute);

// The mask (0/1 per voxel) as a 3D image on the series' grid.
Image mask_image(const ImageHeader& grid, const std::vector<uint8_t>& mask);

}  // namespace rtf
