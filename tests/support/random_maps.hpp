// Masks and statistic maps for the cluster and TFCE tests (tests/permutation): a random mask, an ellipsoidal "brain",
// and smooth random maps in which clusters of many shapes and sizes form and merge across thresholds.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace rtf::test {

using GridDims = std::array<int64_t, 3>;

// nx * ny * nz.
size_t grid_size(const GridDims& dims);

// Each voxel inside with probability `inside`; the central voxel always (never empty).
std::vector<uint8_t> random_mask(const GridDims& dims, std::mt19937& rng, double inside);

// The ellipsoid touching the grid one voxel in from each face (semi-axes (n - 2) / 2, centred on the grid).
std::vector<uint8_t> ellipsoid_mask(const GridDims& dims);

// `count` maps of the masked voxels (masked voxels only, x fastest, map after map): white noise averaged over 3x3x3
// neighbourhoods (clipped at the grid's edges), scaled to standard deviation `scale`.
std::vector<float> smooth_maps(const GridDims& dims, const std::vector<uint8_t>& mask, int count, std::mt19937& rng,
                               double scale = 1.0);

}  // namespace rtf::test
