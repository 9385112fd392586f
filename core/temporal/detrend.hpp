// Temporal detrending on the device: every voxel's series is projected onto an orthonormal basis
// (Legendre polynomials and/or SPM's DCT high-pass set, see detrend_basis.hpp) and the non-constant
// components are subtracted, keeping the voxel's mean unless `remove_mean` is set.
// See docs/algorithms/detrending.md.
#pragma once

#include <Eigen/Core>
#include <cstdint>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/image/image.hpp"
#include "core/temporal/detrend_basis.hpp"

namespace rtf {

class Detrender {
 public:
  // `num_voxels` voxels per volume, `num_volumes` per series; `tr_s` is needed for the DCT set.
  Detrender(Device& device, int64_t num_voxels, int64_t num_volumes, double tr_s, DetrendSpec spec);

  // Detrends the series in `in` (num_volumes volumes of num_voxels, volume-major) into `out`; the
  // two may be the same buffer. Enqueued on the compute queue.
  ClEvent enqueue(const DeviceBuffer<float>& in, DeviceBuffer<float>& out);

  // Host convenience: upload, detrend, download.
  Image detrend(const Image& image);

  const Eigen::MatrixXd& design() const { return design_; }  // raw basis, constant first
  const Eigen::MatrixXd& basis() const { return basis_; }    // orthonormalised, same span and order
  // Basis columns subtracted from each series (all of them with remove_mean, else all but the constant).
  int removed_columns() const { return removed_; }

 private:
  Device& device_;
  int64_t num_voxels_;
  int64_t num_volumes_;
  Eigen::MatrixXd design_;
  Eigen::MatrixXd basis_;
  int removed_ = 0;
  DeviceBuffer<float> basis_buffer_;
  ClKernel kernel_;
};

}  // namespace rtf
