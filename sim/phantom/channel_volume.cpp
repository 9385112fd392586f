// Supersampled trilinear sampling of template-space channel maps into (moved) EPI voxels.
#include "sim/phantom/channel_volume.hpp"

#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace rtf::sim {

ChannelVolume::ChannelVolume(const std::array<int64_t, 3>& d, const Eigen::Matrix4d& a, int c)
    : dims(d), affine(a), channels(c), data(static_cast<size_t>(d[0] * d[1] * d[2] * c), 0.0f) {}

VoxelSampler::VoxelSampler(const ChannelVolume& volume, const EpiGrid& grid, int supersample)
    : volume_(volume), grid_(grid), supersample_(supersample), template_inverse_(volume.affine.inverse()) {
  if (supersample < 1) throw std::invalid_argument("supersample must be >= 1");
  if (volume.channels < 1) throw std::invalid_argument("a channel volume needs at least one channel");
  for (int s = 0; s < supersample; ++s) offsets_.push_back((s + 0.5) / supersample - 0.5);
  for (int a = 0; a < 3; ++a) block_dims_[a] = (volume.dims[a] + kBlock - 1) / kBlock;
  blocks_.assign(static_cast<size_t>(block_dims_[0] * block_dims_[1] * block_dims_[2]), 0);
  int64_t i = 0;
  for (int64_t z = 0; z < volume.dims[2]; ++z) {
    for (int64_t y = 0; y < volume.dims[1]; ++y) {
      for (int64_t x = 0; x < volume.dims[0]; ++x, ++i) {
        const float* v = volume.data.data() + i * volume.channels;
        if (std::any_of(v, v + volume.channels, [](float c) { return c != 0.0f; })) {
          blocks_[static_cast<size_t>(((z / kBlock) * block_dims_[1] + y / kBlock) * block_dims_[0] + x / kBlock)] = 1;
        }
      }
    }
  }
}

Eigen::Matrix4d VoxelSampler::epi_to_template(const Eigen::Matrix4d& motion) const {
  return template_inverse_ * motion.inverse() * grid_.affine;
}

namespace {

// Trilinear samples of one voxel's points, summed per channel into acc (NC > 0: compile-time channel count).
template <int NC>
bool accumulate_points(const float* data, int nc_runtime, int64_t tx, int64_t ty, int64_t tz,
                       const Eigen::Vector3d& centre, const std::vector<Eigen::Vector3d>& points, double* acc) {
  const int nc = NC > 0 ? NC : nc_runtime;
  bool inside = false;
  const int64_t sxy = tx * ty;
  for (const Eigen::Vector3d& d : points) {
    const double px = centre.x() + d.x(), py = centre.y() + d.y(), pz = centre.z() + d.z();
    const double fx0 = std::floor(px), fy0 = std::floor(py), fz0 = std::floor(pz);
    const auto ix = static_cast<int64_t>(fx0), iy = static_cast<int64_t>(fy0), iz = static_cast<int64_t>(fz0);
    // Outside the grid's interior the neighbourhood touches the zero border (or beyond): contributes 0.
    if (ix < 0 || iy < 0 || iz < 0 || ix >= tx - 1 || iy >= ty - 1 || iz >= tz - 1) continue;
    inside = true;
    const double fx = px - fx0, fy = py - fy0, fz = pz - fz0;
    const double wy0z0 = (1 - fy) * (1 - fz), wy1z0 = fy * (1 - fz), wy0z1 = (1 - fy) * fz, wy1z1 = fy * fz;
    const float* v = data + ((iz * ty + iy) * tx + ix) * nc;
    const float* rows[4] = {v, v + tx * nc, v + sxy * nc, v + (sxy + tx) * nc};
    const double wrow[4] = {wy0z0, wy1z0, wy0z1, wy1z1};
    for (int r = 0; r < 4; ++r) {
      const double w0 = wrow[r] * (1 - fx), w1 = wrow[r] * fx;
      const float* a = rows[r];
      for (int c = 0; c < nc; ++c) acc[c] += w0 * a[c] + w1 * a[nc + c];
    }
  }
  return inside;
}

}  // namespace

bool VoxelSampler::sample_row(const Eigen::Matrix4d& g, int64_t y, int64_t z, float* out) const {
  const int nc = volume_.channels;
  const int64_t nx_out = grid_.dims[0];
  std::fill(out, out + nx_out * nc, 0.0f);
  const int64_t tx = volume_.dims[0], ty = volume_.dims[1], tz = volume_.dims[2];
  const Eigen::Vector3d gx = g.block<3, 1>(0, 0), gy = g.block<3, 1>(0, 1), gz = g.block<3, 1>(0, 2);
  const Eigen::Vector3d row_origin = g.block<3, 1>(0, 3) + gy * static_cast<double>(y) + gz * static_cast<double>(z);
  // Half-extent (template voxels) of a voxel's sample points and their trilinear neighbours, per template axis.
  const Eigen::Vector3d reach = 0.5 * (gx.cwiseAbs() + gy.cwiseAbs() + gz.cwiseAbs()) + Eigen::Vector3d::Ones();
  thread_local std::vector<Eigen::Vector3d> points;  // per-thread scratch: no allocation per row
  thread_local std::vector<double> acc;
  points.clear();
  for (double ok : offsets_) {
    for (double oj : offsets_) {
      for (double oi : offsets_) points.push_back(gx * oi + gy * oj + gz * ok);
    }
  }
  const float inv_count = 1.0f / static_cast<float>(points.size());
  const float* data = volume_.data.data();
  bool any = false;
  for (int64_t x = 0; x < nx_out; ++x) {
    const Eigen::Vector3d centre = row_origin + gx * static_cast<double>(x);
    if (!occupied(centre - reach, centre + reach)) continue;
    acc.assign(static_cast<size_t>(nc), 0.0);
    bool inside = false;
    switch (nc) {
      case 3:
        inside = accumulate_points<3>(data, nc, tx, ty, tz, centre, points, acc.data());
        break;
      case 4:
        inside = accumulate_points<4>(data, nc, tx, ty, tz, centre, points, acc.data());
        break;
      default:
        inside = accumulate_points<0>(data, nc, tx, ty, tz, centre, points, acc.data());
    }
    if (!inside) continue;
    any = true;
    for (int c = 0; c < nc; ++c) out[x * nc + c] = static_cast<float>(acc[static_cast<size_t>(c)]) * inv_count;
  }
  return any;
}

bool VoxelSampler::occupied(const Eigen::Vector3d& lo, const Eigen::Vector3d& hi) const {
  int64_t b0[3], b1[3];
  for (int a = 0; a < 3; ++a) {
    const double l = std::max(0.0, std::floor(lo[a]));
    const double h = std::min(static_cast<double>(volume_.dims[a] - 1), std::ceil(hi[a]));
    if (h < l) return false;
    b0[a] = static_cast<int64_t>(l) / kBlock;
    b1[a] = static_cast<int64_t>(h) / kBlock;
  }
  for (int64_t k = b0[2]; k <= b1[2]; ++k) {
    for (int64_t j = b0[1]; j <= b1[1]; ++j) {
      for (int64_t i = b0[0]; i <= b1[0]; ++i) {
        if (blocks_[static_cast<size_t>((k * block_dims_[1] + j) * block_dims_[0] + i)]) return true;
      }
    }
  }
  return false;
}

}  // namespace rtf::sim
