// Uniform random images with a diagonal affine centred on the grid.
#include "sim/random_image.hpp"

#include <random>

namespace rtf::sim {

Image random_image(const RandomImageSpec& spec) {
  ImageHeader h;
  h.dims = spec.dims;
  h.num_volumes = spec.num_volumes;
  h.voxel_mm = spec.voxel_mm;
  h.tr_s = spec.tr_s;
  h.affine = Eigen::Matrix4d::Identity();
  for (int i = 0; i < 3; ++i) {
    h.affine(i, i) = spec.voxel_mm[i];
    h.affine(i, 3) = -0.5 * spec.voxel_mm[i] * static_cast<double>(spec.dims[i] - 1);
  }
  Image img(h);
  std::mt19937_64 rng(spec.seed);
  std::uniform_real_distribution<float> dist(spec.low, spec.high);
  for (auto& v : img.data()) v = dist(rng);
  return img;
}

}  // namespace rtf::sim
