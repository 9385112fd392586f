// EPI grid geometry of the phantom: affine, header, and where the field of view sits on the brain.
#include "sim/phantom/epi_grid.hpp"

namespace rtf::sim {

ImageHeader EpiGrid::header(int64_t volumes, double tr_s) const {
  ImageHeader h;
  h.dims = dims;
  h.num_volumes = volumes;
  h.voxel_mm = voxel_mm;
  h.affine = affine;
  h.xform_code = 1;
  h.tr_s = tr_s;
  return h;
}

Eigen::Vector3d default_grid_centre(const TissueModel& tissue, const std::array<int64_t, 3>& dims,
                                    const std::array<double, 3>& voxel_mm) {
  Eigen::Vector3d c = 0.5 * (tissue.brain_min_mm + tissue.brain_max_mm);
  const double fov_z = static_cast<double>(dims[2]) * voxel_mm[2];
  const double brain_z = tissue.brain_max_mm.z() - tissue.brain_min_mm.z() + 1.0;
  if (fov_z < brain_z) {
    constexpr double kTopMarginMm = 3.0;
    const double top_slice_centre = tissue.brain_max_mm.z() + kTopMarginMm;
    c.z() = top_slice_centre - 0.5 * static_cast<double>(dims[2] - 1) * voxel_mm[2];
  }
  return c;
}

EpiGrid make_epi_grid(const std::array<int64_t, 3>& dims, const std::array<double, 3>& voxel_mm,
                      const Eigen::Vector3d& centre_mm) {
  EpiGrid g;
  g.dims = dims;
  g.voxel_mm = voxel_mm;
  g.centre_mm = centre_mm;
  g.affine = Eigen::Matrix4d::Identity();
  for (int a = 0; a < 3; ++a) {
    g.affine(a, a) = voxel_mm[a];
    g.affine(a, 3) = centre_mm[a] - 0.5 * static_cast<double>(dims[a] - 1) * voxel_mm[a];
  }
  return g;
}

}  // namespace rtf::sim
