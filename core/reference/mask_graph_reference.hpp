// The voxels of a mask as a graph, for the flood-fill references (cluster_reference, tfce_reference): mask index <->
// full-grid index, and each masked voxel's masked neighbours under 6-, 18- or 26-connectivity. Plain loops, written
// for clarity.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace rtf::reference {

class MaskGraph {
 public:
  // Throws std::invalid_argument (the message starting with `who`) for a connectivity other than 6, 18 or 26 or a
  // mask that is not dims' size.
  MaskGraph(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity, const std::string& who);

  size_t voxels() const { return full_.size(); }

  // Calls visit(n) for each masked neighbour n (a mask index) of mask voxel v.
  template <typename Visit>
  void for_each_neighbour(int64_t v, Visit&& visit) const {
    const auto [nx, ny, nz] = dims_;
    const int64_t i = full_[static_cast<size_t>(v)];
    const int64_t x = i % nx, y = (i / nx) % ny, z = i / (nx * ny);
    for (int dz = -1; dz <= 1; ++dz) {
      for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
          const int steps = std::abs(dx) + std::abs(dy) + std::abs(dz);
          if (steps == 0 || steps > reach_) continue;
          const int64_t a = x + dx, b = y + dy, c = z + dz;
          if (a < 0 || b < 0 || c < 0 || a >= nx || b >= ny || c >= nz) continue;
          const int64_t n = masked_[static_cast<size_t>(a + nx * (b + ny * c))];
          if (n >= 0) visit(n);
        }
      }
    }
  }

 private:
  std::array<int64_t, 3> dims_;
  int reach_;                    // the largest |dx| + |dy| + |dz| of a neighbour
  std::vector<int64_t> masked_;  // full grid -> mask index, -1 outside
  std::vector<int64_t> full_;    // mask index -> full grid
};

}  // namespace rtf::reference
