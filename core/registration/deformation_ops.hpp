// The device operations on deformation fields that the non-linear registration is made of (kernels/deformation.cl):
// exponentiating a stationary velocity field by scaling and squaring, composing fields, warping an image, the
// local-correlation and demons forces, the velocity update, the largest displacement, the Jacobian determinant and a
// change of units. A field is three float volumes back to back (x, y, z components, each x fastest) in voxel units of
// one grid; all buffers of one DeformationOps live on that grid. docs/algorithms/normalization.md.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"

namespace rtf {

// The checks of a final warp: its Jacobian determinant's range, the folded voxels (det <= 0) over the grid and inside
// a mask, and the mean and largest length of a residual field (the inverse's error) inside the mask.
struct WarpCheck {
  double min_det = 1.0, max_det = 1.0;
  int64_t folded = 0, folded_in_mask = 0, in_mask = 0;
  double mean_residual = 0.0, max_residual = 0.0;
};

class DeformationOps {
 public:
  DeformationOps(Device& device, std::array<int64_t, 3> dims);

  int64_t voxels() const { return voxels_; }
  const std::array<int64_t, 3>& dims() const { return dims_; }

  // out = s a + s b(x + s a) (out distinct from a and b).
  void compose(const DeviceBuffer<float>& a, const DeviceBuffer<float>& b, DeviceBuffer<float>& out, float scale);
  // u = exp(v) by `squarings` squarings of v / 2^squarings; `scratch` is a field buffer distinct from v and u.
  void exponential(const DeviceBuffer<float>& v, DeviceBuffer<float>& u, DeviceBuffer<float>& scratch, int squarings);
  // The number of squarings that keeps the first step below half a voxel for a field whose largest vector is
  // `max_norm` voxels (at least 2).
  static int squarings_for(double max_norm);

  // moments = [J, J^2, F J] with J = moving(x + u(x)) (three volumes).
  void warp_moments(const DeviceBuffer<float>& moving, const DeviceBuffer<float>& fixed, const DeviceBuffer<float>& u,
                    DeviceBuffer<float>& moments);
  // moments = [F, F^2] (two volumes).
  void fixed_moments(const DeviceBuffer<float>& fixed, DeviceBuffer<float>& moments);
  // The local-correlation force and cc map from J (`moments`' first volume), the smoothed [J, J^2, F J] (`local`)
  // and the smoothed [F, F^2] (`fixed_local`).
  // out = 1 where the fixed local variance (fixed_local = smoothed [F, F^2]) exceeds eps, else 0.
  void variance_indicator(const DeviceBuffer<float>& fixed_local, float eps, DeviceBuffer<float>& out);
  // Guards: no force where the fixed local variance is <= eps_fixed or the moving one <= eps_moving.
  void lncc_force(const DeviceBuffer<float>& fixed, const DeviceBuffer<float>& moments,
                  const DeviceBuffer<float>& local, const DeviceBuffer<float>& fixed_local, float eps_fixed,
                  float eps_moving, DeviceBuffer<float>& force, DeviceBuffer<float>& cc);
  // The demons force of the squared difference between F and J (`moments`' first volume) and the cost (F - J)^2.
  void demons_force(const DeviceBuffer<float>& fixed, const DeviceBuffer<float>& moments, float alpha,
                    DeviceBuffer<float>& force, DeviceBuffer<float>& cost);

  // v = a v + b where v != 0, over one volume.
  void scale_intensity(DeviceBuffer<float>& v, float a, float b);
  // v += scale f (whole fields).
  void add_scaled(DeviceBuffer<float>& v, const DeviceBuffer<float>& f, float scale);
  // v += g f with g = min(gain, step / max|f|) (0 when f is 0), g computed and applied on the device (no wait).
  void add_capped(DeviceBuffer<float>& v, const DeviceBuffer<float>& f, float gain, float step);
  // The largest |f(x)| over the grid, in voxels (blocking).
  double max_norm(const DeviceBuffer<float>& f);
  // det(I + Du) per voxel (one volume).
  void jacobian(const DeviceBuffer<float>& u, DeviceBuffer<float>& det);
  // out = M f per voxel (out may be f).
  void transform_vectors(const DeviceBuffer<float>& f, DeviceBuffer<float>& out, const Eigen::Matrix3d& m);
  // The checks of `det` (one volume) and `residual` (a field) with the mask mask_image > 0 (blocking).
  WarpCheck warp_check(const DeviceBuffer<float>& det, const DeviceBuffer<float>& residual,
                       const DeviceBuffer<float>& mask_image);

 private:
  Device& device_;
  std::array<int64_t, 3> dims_;
  int64_t voxels_;
  ClKernel compose_, warp_moments_, fixed_moments_, lncc_force_, variance_indicator_, demons_force_, scale_intensity_,
      add_scaled_, add_scaled_by_, capped_gain_, norm_max_, jacobian_, transform_vectors_, warp_check_;
  DeviceBuffer<float> partial_, check_partial_, gain_;
  size_t norm_groups_;
};

}  // namespace rtf
