// Mask indices and neighbour tables of a grid (mask_neighbours.hpp).
#include "core/permutation/mask_neighbours.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "core/util/host_threads.hpp"

namespace rtf {

MaskNeighbours mask_neighbours(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity,
                               NeighbourSet set, NeighbourLayout layout, const std::string& what) {
  if (connectivity != 6 && connectivity != 18 && connectivity != 26) {
    throw std::invalid_argument(fmt::format("{}: connectivity {} (6, 18 or 26)", what, connectivity));
  }
  const int64_t nx = dims[0], ny = dims[1], nz = dims[2];  // named: lambdas below capture them
  if (nx < 1 || ny < 1 || nz < 1 || nx * ny > std::numeric_limits<int32_t>::max() / nz) {
    throw std::invalid_argument(fmt::format("{}: grid {}x{}x{}", what, nx, ny, nz));
  }
  const auto grid = static_cast<size_t>(nx * ny * nz);
  if (mask.size() != grid) {
    throw std::invalid_argument(
        fmt::format("{}: mask of {} voxels for a {}x{}x{} grid", what, mask.size(), nx, ny, nz));
  }
  MaskNeighbours out;
  out.set = set;
  out.layout = layout;
  std::vector<int32_t> index(grid, -1);  // full grid -> mask index
  for (size_t i = 0; i < grid; ++i) {
    if (mask[i] != 0) index[i] = static_cast<int32_t>(out.voxels++);
  }
  if (out.voxels == 0) throw std::invalid_argument(fmt::format("{}: the mask is empty", what));

  const int reach = connectivity == 6 ? 1 : connectivity == 18 ? 2 : 3;  // largest |dx| + |dy| + |dz|
  std::vector<std::array<int, 3>> offsets;
  for (int dz = -1; dz <= 1; ++dz) {
    for (int dy = -1; dy <= 1; ++dy) {
      for (int dx = -1; dx <= 1; ++dx) {
        const int steps = std::abs(dx) + std::abs(dy) + std::abs(dz);
        const bool precedes = dz < 0 || (dz == 0 && (dy < 0 || (dy == 0 && dx < 0)));
        if (steps >= 1 && steps <= reach && (set == NeighbourSet::kAll || precedes)) offsets.push_back({dx, dy, dz});
      }
    }
  }
  out.offsets = offsets.size();
  out.table.assign(out.offsets * out.voxels, -1);
  const auto fill_slab = [&](int64_t z_begin, int64_t z_end) {
    for (int64_t z = z_begin; z < z_end; ++z) {
      for (int64_t y = 0; y < ny; ++y) {
        for (int64_t x = 0; x < nx; ++x) {
          const int32_t v = index[static_cast<size_t>(x + nx * (y + ny * z))];
          if (v < 0) continue;
          for (size_t k = 0; k < offsets.size(); ++k) {
            const int64_t a = x + offsets[k][0], b = y + offsets[k][1], c = z + offsets[k][2];
            if (a < 0 || b < 0 || c < 0 || a >= nx || b >= ny || c >= nz) continue;
            const size_t slot = layout == NeighbourLayout::kNeighbourMajor ? k * out.voxels + static_cast<size_t>(v)
                                                                           : static_cast<size_t>(v) * out.offsets + k;
            out.table[slot] = index[static_cast<size_t>(a + nx * (b + ny * c))];
          }
        }
      }
    }
  };
  // Slabs of z on up to 8 threads (each voxel's entries are written by its slab's thread alone): a 2 mm brain's table
  // (~280,000 voxels x 26) took ~40 ms on one, once per device in randomise's per-device setup.
  const size_t threads = grid < (size_t{1} << 18) ? 1 : std::min<size_t>(8, host_thread_count());
  host_ranges(static_cast<size_t>(nz), threads, [&](size_t z_begin, size_t z_end, size_t) {
    fill_slab(static_cast<int64_t>(z_begin), static_cast<int64_t>(z_end));
  });
  return out;
}

}  // namespace rtf
