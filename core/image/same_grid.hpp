// The check that two inputs (a BOLD series and its mask, several subjects' images) share one voxel grid.
#pragma once

#include <string>

#include "core/image/image.hpp"

namespace rtf {

// Throws std::invalid_argument naming both files when `other` is not on the same voxel grid as `ref`.
void require_same_grid(const ImageHeader& ref, const std::string& ref_name, const ImageHeader& other,
                       const std::string& other_name);

}  // namespace rtf
