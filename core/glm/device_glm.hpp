// DeviceGlm: the device half of a GLM over V voxels and P design columns. Compensated (Kahan) float accumulators of
// X'y and y'y per voxel, filled from any list of volumes of a device buffer (a ring's slots or a whole series),
// optionally AR(1)-prewhitened; then per voxel the estimates, residual variance, contrast estimates, t and F from a
// GlmModel. Every buffer is allocated in the constructor; accumulate() and solve() allocate nothing.
// kernels/glm.cl, docs/algorithms/glm.md.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/device/kernel_profile.hpp"
#include "core/glm/glm_model.hpp"

namespace rtf {

struct DeviceGlmSpec {
  int64_t voxels = 0;
  int columns = 0;                           // P
  std::vector<GlmContrast> contrasts;        // t contrasts (1 row) and F contrasts (several rows), in output order
  int constant_column = -1;                  // the design's constant column, or -1 (the data are then not shifted)
  int64_t max_volumes_per_call = 1;          // the most volumes one accumulate() may add
  std::optional<std::vector<uint8_t>> mask;  // voxels (nonzero = fit); others get NaN outputs
  // Kahan-compensated accumulators. Off, plain float sums of shifted data are ~10x less accurate (t within 7.5e-6
  // instead of 1e-6 relative over 40 volumes, measured): every GLM here keeps them on; the option is for benchmarks.
  bool compensated = true;
  int vector_width = 0;  // voxels per work-item: 0 = preferred_vector_width (1 on GPUs), else 1, 2, 4, 8 or 16
};

class DeviceGlm {
 public:
  DeviceGlm(Device& device, DeviceGlmSpec spec);

  // Zeroes the accumulators and sets the per-voxel shift to the volume at `slot` of `volumes` (or 0 without a
  // constant column). Any value near the data works; the shift only moves the constant's estimate (added back).
  void reset(const DeviceBuffer<float>& volumes, int64_t slot);

  // Adds volumes: slots[k] of `volumes`, design row rows.row(k) (whitened by the caller when rho != 0), and
  // prev_slots[k] the slot of the series' previous volume for y_t - rho y_(t-1) (-1: first of a series, scaled by
  // sqrt(1 - rho^2)). Enqueued; the host arrays are copied before it returns.
  void accumulate(const DeviceBuffer<float>& volumes, std::span<const int64_t> slots,
                  std::span<const int64_t> prev_slots, const Eigen::MatrixXd& rows, double rho = 0.0);

  // Estimates and statistics from the accumulators with `model` (from the same rows). Enqueued; returns the event
  // after which the outputs hold them.
  ClEvent solve(const GlmModel& model);

  void set_profile(KernelProfile* profile) { profile_ = profile; }

  const DeviceGlmSpec& spec() const { return spec_; }
  int t_contrasts() const { return t_count_; }
  int vector_width() const { return vec_; }
  int f_contrasts() const { return f_count_; }
  const DeviceBuffer<float>& beta() const { return beta_; }      // [P][V]
  const DeviceBuffer<float>& sigma2() const { return sigma2_; }  // [V]
  const DeviceBuffer<float>& contrast() const { return con_; }   // [K][V] (t contrasts only)
  const DeviceBuffer<float>& t() const { return t_; }            // [K][V]
  const DeviceBuffer<float>& f() const { return f_; }            // [F][V]

 private:
  // Waits until the previous non-blocking uploads have read their host arrays.
  void wait_for_uploads();
  size_t work_items() const;  // ceil(voxels / vec_)
  size_t local_size() const;

  Device& device_;
  DeviceGlmSpec spec_;
  int t_count_ = 0, f_count_ = 0, f_rows_ = 1;
  int vec_ = 1;  // voxels per work-item
  ClKernel accumulate_kernel_, solve_kernel_;
  DeviceBuffer<float> acc_, comp_, shift_;
  DeviceBuffer<cl_int> slots_, prev_;
  DeviceBuffer<float> rows_;
  DeviceBuffer<float> pinv_, tcon_, tvar_, fmat_, fmid_;
  DeviceBuffer<cl_int> fq_;
  DeviceBuffer<uint8_t> mask_;
  DeviceBuffer<float> beta_, sigma2_, con_, t_, f_;
  // Host staging of the non-blocking uploads (kept alive until upload_done_ completes).
  std::vector<cl_int> host_slots_, host_prev_, host_fq_;
  std::vector<float> host_rows_, host_pinv_, host_tcon_, host_tvar_, host_fmat_, host_fmid_;
  std::vector<ClEvent> uploads_;
  KernelProfile* profile_ = nullptr;
};

}  // namespace rtf
