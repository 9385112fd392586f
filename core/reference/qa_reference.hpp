// Double-precision references of the QA stage's device measures (core/qa/): voxel-wise mean, SD and tSNR of a list of
// volumes by two passes, and a volume's per-slice masked means and global signal. Plain loops, written for clarity.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rtf::reference {

struct VoxelMoments {
  std::vector<double> mean, sd, tsnr;  // sd: population SD; tsnr = mean / sd, 0 where sd is 0
};

// The moments of volumes [first, last) of `volumes` (each the same length).
VoxelMoments voxel_moments(const std::vector<std::vector<float>>& volumes, size_t first, size_t last);

struct SliceMeans {
  std::vector<double> slice;  // NaN where a slice has no masked, finite voxel
  double global = 0.0;
};

SliceMeans slice_means(const std::vector<float>& volume, std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask);

}  // namespace rtf::reference
