// Template-space maps (several float channels per 1 mm voxel, interleaved) and their sampling into EPI voxels:
// each EPI voxel is the mean of trilinear samples at supersample^3 points spread evenly over the voxel, taken
// at the template position M^{-1} x of each point x (M: the head's motion, template -> moved position).
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <vector>

#include "sim/phantom/epi_grid.hpp"

namespace rtf::sim {

struct ChannelVolume {
  std::array<int64_t, 3> dims{0, 0, 0};
  Eigen::Matrix4d affine = Eigen::Matrix4d::Identity();  // voxel (i, j, k, 1) -> world mm
  int channels = 0;
  // data[((k * ny + j) * nx + i) * channels + c]; every channel must be 0 on the outermost voxel layer,
  // because points whose trilinear neighbourhood leaves the grid are taken as 0.
  std::vector<float> data;

  ChannelVolume() = default;
  ChannelVolume(const std::array<int64_t, 3>& dims, const Eigen::Matrix4d& affine, int channels);
  int64_t voxels() const { return dims[0] * dims[1] * dims[2]; }
  float* voxel(int64_t index) { return data.data() + index * channels; }
};

class VoxelSampler {
 public:
  VoxelSampler(const ChannelVolume& volume, const EpiGrid& grid, int supersample);

  // EPI voxel index -> template voxel index for a head moved by `motion` (world 4x4): A_T^-1 M^-1 A_EPI.
  Eigen::Matrix4d epi_to_template(const Eigen::Matrix4d& motion) const;

  // Mean of every channel over the supersampled points of each voxel of row (y, z) of the EPI grid, written to
  // out[x * channels + c] (out holds nx * channels floats). Returns false when the whole row is background.
  bool sample_row(const Eigen::Matrix4d& epi_to_template, int64_t y, int64_t z, float* out) const;

  int channels() const { return volume_.channels; }
  const EpiGrid& grid() const { return grid_; }

 private:
  const ChannelVolume& volume_;
  EpiGrid grid_;
  int supersample_;
  Eigen::Matrix4d template_inverse_;  // world -> template voxel
  std::vector<double> offsets_;       // sub-voxel offsets in EPI voxel units, in (-0.5, 0.5)
  // Occupancy of kBlock^3 blocks of template voxels (any channel non-zero): voxels whose sample neighbourhood
  // touches no occupied block are skipped.
  static constexpr int64_t kBlock = 4;
  std::array<int64_t, 3> block_dims_{0, 0, 0};
  std::vector<uint8_t> blocks_;
  bool occupied(const Eigen::Vector3d& lo, const Eigen::Vector3d& hi) const;
};

}  // namespace rtf::sim
