// Random masks, an ellipsoidal mask and smooth random maps for the cluster and TFCE tests (random_maps.hpp).
#include "tests/support/random_maps.hpp"

#include <algorithm>
#include <cmath>

namespace rtf::test {

size_t grid_size(const GridDims& dims) {
  return static_cast<size_t>(dims[0] * dims[1] * dims[2]);
}

std::vector<uint8_t> random_mask(const GridDims& dims, std::mt19937& rng, double inside) {
  std::bernoulli_distribution in(inside);
  std::vector<uint8_t> mask(grid_size(dims));
  for (auto& m : mask) m = in(rng) ? 1 : 0;
  mask[grid_size(dims) / 2] = 1;  // never empty
  return mask;
}

std::vector<uint8_t> ellipsoid_mask(const GridDims& dims) {
  const auto [nx, ny, nz] = dims;
  std::vector<uint8_t> mask(grid_size(dims));
  for (int64_t z = 0; z < nz; ++z) {
    for (int64_t y = 0; y < ny; ++y) {
      for (int64_t x = 0; x < nx; ++x) {
        const double u = (x - (nx - 1) / 2.0) / ((nx - 2) / 2.0), v = (y - (ny - 1) / 2.0) / ((ny - 2) / 2.0),
                     w = (z - (nz - 1) / 2.0) / ((nz - 2) / 2.0);
        mask[static_cast<size_t>(x + nx * (y + ny * z))] = u * u + v * v + w * w <= 1.0 ? 1 : 0;
      }
    }
  }
  return mask;
}

std::vector<float> smooth_maps(const GridDims& dims, const std::vector<uint8_t>& mask, int count, std::mt19937& rng,
                               double scale) {
  const auto [nx, ny, nz] = dims;
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> out;
  std::vector<float> white(grid_size(dims));
  for (int b = 0; b < count; ++b) {
    for (auto& w : white) w = noise(rng);
    for (int64_t z = 0; z < nz; ++z) {
      for (int64_t y = 0; y < ny; ++y) {
        for (int64_t x = 0; x < nx; ++x) {
          if (mask[static_cast<size_t>(x + nx * (y + ny * z))] == 0) continue;
          double sum = 0.0;
          int n = 0;
          for (int64_t c = std::max<int64_t>(z - 1, 0); c <= std::min(z + 1, nz - 1); ++c) {
            for (int64_t b2 = std::max<int64_t>(y - 1, 0); b2 <= std::min(y + 1, ny - 1); ++b2) {
              for (int64_t a = std::max<int64_t>(x - 1, 0); a <= std::min(x + 1, nx - 1); ++a) {
                sum += white[static_cast<size_t>(a + nx * (b2 + ny * c))];
                ++n;
              }
            }
          }
          out.push_back(static_cast<float>(scale * sum / std::sqrt(static_cast<double>(n))));
        }
      }
    }
  }
  return out;
}

}  // namespace rtf::test
