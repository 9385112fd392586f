// Direct 3D normalised convolution in double precision (reference for the separable kernel).
#include "core/reference/smoothing_reference.hpp"

namespace rtf::reference {

std::vector<double> smooth_volume(std::span<const float> volume, std::array<int64_t, 3> dims,
                                  const std::array<std::vector<double>, 3>& taps,
                                  std::optional<std::span<const uint8_t>> mask) {
  const int64_t nx = dims[0], ny = dims[1], nz = dims[2];
  const int64_t rx = static_cast<int64_t>(taps[0].size() / 2);
  const int64_t ry = static_cast<int64_t>(taps[1].size() / 2);
  const int64_t rz = static_cast<int64_t>(taps[2].size() / 2);
  auto idx = [&](int64_t x, int64_t y, int64_t z) { return static_cast<size_t>((z * ny + y) * nx + x); };
  auto certain = [&](int64_t x, int64_t y, int64_t z) {
    if (x < 0 || y < 0 || z < 0 || x >= nx || y >= ny || z >= nz) return 0.0;
    return (!mask || (*mask)[idx(x, y, z)]) ? 1.0 : 0.0;
  };

  std::vector<double> out(static_cast<size_t>(nx * ny * nz), 0.0);
  for (int64_t z = 0; z < nz; ++z) {
    for (int64_t y = 0; y < ny; ++y) {
      for (int64_t x = 0; x < nx; ++x) {
        if (mask && !(*mask)[idx(x, y, z)]) continue;
        double num = 0.0, den = 0.0;
        for (int64_t k = -rz; k <= rz; ++k) {
          for (int64_t j = -ry; j <= ry; ++j) {
            for (int64_t i = -rx; i <= rx; ++i) {
              const double c = certain(x + i, y + j, z + k);
              if (c == 0.0) continue;
              const double w = taps[0][static_cast<size_t>(i + rx)] * taps[1][static_cast<size_t>(j + ry)] *
                               taps[2][static_cast<size_t>(k + rz)];
              num += w * c * volume[idx(x + i, y + j, z + k)];
              den += w * c;
            }
          }
        }
        out[idx(x, y, z)] = num / den;
      }
    }
  }
  return out;
}

}  // namespace rtf::reference
