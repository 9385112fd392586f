// require_same_grid: dimensions first (the message names both sizes), then the affines.
#include "core/image/same_grid.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace rtf {

void require_same_grid(const ImageHeader& ref, const std::string& ref_name, const ImageHeader& other,
                       const std::string& other_name) {
  if (ref.dims != other.dims) {
    throw std::invalid_argument(fmt::format("{} is {}x{}x{} but {} is {}x{}x{}: they must share one voxel grid",
                                            other_name, other.dims[0], other.dims[1], other.dims[2], ref_name,
                                            ref.dims[0], ref.dims[1], ref.dims[2]));
  }
  if (!ref.same_grid(other, 1e-3)) {
    throw std::invalid_argument(
        fmt::format("{} and {} have the same dimensions but different affines (voxel-to-world)", other_name, ref_name));
  }
}

}  // namespace rtf
