// The carpet plot's rows (Power 2017, NeuroImage 154:150): a fixed set of voxels whose values the live stage gathers
// each TR (core/qa/volume_pass.hpp, with its other per-voxel measures) so that only those few floats cross to the host.
// carpet_voxels() picks up to `rows` of a mask evenly (in index order), those of a preferred set (grey matter, when a
// segmentation or atlas is known) first.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace rtf {

struct CarpetVoxels {
  std::vector<int> indices;  // voxel indices in display order
  int64_t split = 0;         // indices before it are in the preferred set (0: none given)
};

// Up to `rows` voxels of `mask` (non-zero inside), spread evenly over its voxels in index order; with `preferred`
// (same size, non-zero: preferred), the preferred voxels of the mask first and the rest after, each share in
// proportion to its size (at least one row for a non-empty part).
CarpetVoxels carpet_voxels(std::span<const uint8_t> mask, int64_t rows, std::span<const uint8_t> preferred = {});

}  // namespace rtf
