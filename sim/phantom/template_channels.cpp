// Template-space signal and ground-truth maps of the phantom.
#include "sim/phantom/template_channels.hpp"

#include <Eigen/LU>
#include <cmath>

namespace rtf::sim {
namespace {

// Calls fn(index, world_mm, fractions) for every brain voxel of the tissue model.
template <typename Fn>
void for_each_brain_voxel(const TissueModel& tissue, Fn&& fn) {
  int64_t i = 0;
  for (int64_t z = 0; z < tissue.dims[2]; ++z) {
    for (int64_t y = 0; y < tissue.dims[1]; ++y) {
      for (int64_t x = 0; x < tissue.dims[0]; ++x, ++i) {
        const auto& f = tissue.fractions[static_cast<size_t>(i)];
        if (f[0] + f[1] + f[2] <= 0.0f) continue;
        const Eigen::Vector3d w = (tissue.affine * Eigen::Vector4d(static_cast<double>(x), static_cast<double>(y),
                                                                   static_cast<double>(z), 1.0))
                                      .head<3>();
        fn(i, w, f);
      }
    }
  }
}

}  // namespace

ChannelVolume signal_channels(const TissueModel& tissue, const std::array<double, 3>& baseline,
                              const std::array<double, 3>& physio_weight, const std::vector<ResolvedRegion>& regions,
                              int conditions) {
  ChannelVolume v(tissue.dims, tissue.affine, kFirstActivationChannel + conditions);
  for_each_brain_voxel(tissue, [&](int64_t i, const Eigen::Vector3d& w, const std::array<float, 3>& f) {
    float* out = v.voxel(i);
    double s0 = 0.0, phys = 0.0;
    for (int k = 0; k < 3; ++k) {
      s0 += f[static_cast<size_t>(k)] * baseline[static_cast<size_t>(k)];
      phys += f[static_cast<size_t>(k)] * baseline[static_cast<size_t>(k)] * physio_weight[static_cast<size_t>(k)];
    }
    out[kBaselineChannel] = static_cast<float>(s0);
    out[kPhysioChannel] = static_cast<float>(phys);
    if (f[kGm] <= 0.0f) return;
    for (const auto& r : regions) {
      if (!r.contains(w)) continue;
      for (int c : r.conditions) {
        out[kFirstActivationChannel + c] += static_cast<float>(baseline[kGm] * f[kGm] * r.psc / 100.0);
      }
    }
  });
  return v;
}

ChannelVolume truth_channels(const TissueModel& tissue, const std::vector<ResolvedRegion>& regions) {
  ChannelVolume v(tissue.dims, tissue.affine, 4);
  for_each_brain_voxel(tissue, [&](int64_t i, const Eigen::Vector3d& w, const std::array<float, 3>& f) {
    float* out = v.voxel(i);
    for (int k = 0; k < 3; ++k) out[k] = f[static_cast<size_t>(k)];
    for (const auto& r : regions) {
      if (r.contains(w)) {
        out[kActivatedChannel] = f[kGm];
        break;
      }
    }
  });
  return v;
}

std::vector<double> region_gm_volume_mm3(const TissueModel& tissue, const std::vector<ResolvedRegion>& regions) {
  const double voxel_volume = std::abs(tissue.affine.topLeftCorner<3, 3>().determinant());
  std::vector<double> volume(regions.size(), 0.0);
  for_each_brain_voxel(tissue, [&](int64_t, const Eigen::Vector3d& w, const std::array<float, 3>& f) {
    for (size_t r = 0; r < regions.size(); ++r) {
      if (regions[r].contains(w)) volume[r] += f[kGm] * voxel_volume;
    }
  });
  return volume;
}

}  // namespace rtf::sim
