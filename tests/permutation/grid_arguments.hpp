// The grid arguments that the cluster and the TFCE statistics (core/permutation) refuse alike, shared by their
// BadArgumentsThrow tests.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "core/device/device.hpp"

namespace rtf::test {

// Statistics{device, dims, mask, connectivity, max_batch} throws std::invalid_argument for a connectivity other than
// 6, 18 or 26, a dimension that is not positive, a mask of the wrong size or with no voxel inside, and a batch below 1.
template <typename Statistics>
void expect_bad_grid_arguments_throw(Device& device) {
  const std::array<int64_t, 3> dims{4, 3, 2};
  const std::vector<uint8_t> mask(24, 1);
  for (const int connectivity : {0, 4, 8, 27}) {
    EXPECT_THROW((Statistics{device, dims, mask, connectivity, 1}), std::invalid_argument) << connectivity;
  }
  EXPECT_THROW((Statistics{device, {4, 0, 2}, {}, 26, 1}), std::invalid_argument);
  EXPECT_THROW((Statistics{device, {-4, 3, 2}, mask, 26, 1}), std::invalid_argument);
  EXPECT_THROW((Statistics{device, dims, std::vector<uint8_t>(23, 1), 26, 1}), std::invalid_argument);
  EXPECT_THROW((Statistics{device, dims, std::vector<uint8_t>(24, 0), 26, 1}), std::invalid_argument);
  EXPECT_THROW((Statistics{device, dims, mask, 26, 0}), std::invalid_argument);
}

}  // namespace rtf::test
