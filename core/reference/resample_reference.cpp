// Double-precision resampling reference: see resample_reference.hpp.
#include "core/reference/resample_reference.hpp"

#include <Eigen/Geometry>
#include <Eigen/LU>

#include "core/registration/point_sampling.hpp"

namespace rtf::reference {

Image resample(const Image& input, const ImageHeader& reference, const std::vector<SpatialTransform>& chain,
               ResampleInterpolation interpolation, double outside) {
  ImageHeader h = input.header();
  h.dims = reference.dims;
  h.voxel_mm = reference.voxel_mm;
  h.affine = reference.affine;
  h.xform_code = reference.xform_code;
  Image out(h);
  const Eigen::Matrix4d to_input = input.header().affine.inverse();
  const auto& dims = input.header().dims;
  for (int64_t z = 0; z < reference.dims[2]; ++z) {
    for (int64_t y = 0; y < reference.dims[1]; ++y) {
      for (int64_t x = 0; x < reference.dims[0]; ++x) {
        Eigen::Vector3d p = (reference.affine * Eigen::Vector4d(static_cast<double>(x), static_cast<double>(y),
                                                                static_cast<double>(z), 1.0))
                                .head<3>();
        for (const SpatialTransform& t : chain) p = transform_point(t, p);
        const Eigen::Vector3d u = (to_input * p.homogeneous()).head<3>();
        const bool inside = inside_volume(dims, u);
        for (int64_t t = 0; t < input.nt(); ++t) {
          out.at(x, y, z, t) =
              static_cast<float>(inside ? sample_clamped(input.volume(t), dims, u, interpolation) : outside);
        }
      }
    }
  }
  return out;
}

}  // namespace rtf::reference
