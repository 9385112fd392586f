// DeformationOps: argument binding and launches of kernels/deformation.cl on one grid.
#include "core/registration/deformation_ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/device/launch.hpp"

namespace rtf {

namespace {

constexpr const char* kSource = "deformation.cl";
constexpr size_t kGroup = 64;
constexpr size_t kNormLocal = 64;
constexpr size_t kNormMaxGroups = 256;
constexpr size_t kCheckTerms = 7;  // kernels/deformation.cl's CHECK_TERMS

void require_size(const DeviceBuffer<float>& buffer, size_t count, const char* what) {
  if (buffer.size() < count) {
    throw std::invalid_argument(fmt::format("deformation: {} holds {} floats, {} needed", what, buffer.size(), count));
  }
}

cl_float4 row(const Eigen::Matrix3d& m, int r) {
  return cl_float4{{static_cast<float>(m(r, 0)), static_cast<float>(m(r, 1)), static_cast<float>(m(r, 2)), 0.0f}};
}

}  // namespace

DeformationOps::DeformationOps(Device& device, std::array<int64_t, 3> dims)
    : device_(device), dims_(dims), voxels_(dims[0] * dims[1] * dims[2]) {
  if (dims[0] < 1 || dims[1] < 1 || dims[2] < 1 || voxels_ > (int64_t{1} << 31) / 3) {
    throw std::invalid_argument(fmt::format("deformation: bad grid {}x{}x{}", dims[0], dims[1], dims[2]));
  }
  compose_ = device.kernel(kSource, "compose_fields");
  warp_moments_ = device.kernel(kSource, "warp_moments");
  fixed_moments_ = device.kernel(kSource, "fixed_moments");
  lncc_force_ = device.kernel(kSource, "lncc_force");
  demons_force_ = device.kernel(kSource, "demons_force");
  variance_indicator_ = device.kernel(kSource, "variance_indicator");
  scale_intensity_ = device.kernel(kSource, "scale_intensity");
  warp_check_ = device.kernel(kSource, "warp_check_partials");
  add_scaled_ = device.kernel(kSource, "add_scaled");
  add_scaled_by_ = device.kernel(kSource, "add_scaled_by");
  capped_gain_ = device.kernel(kSource, "capped_gain");
  norm_max_ = device.kernel(kSource, "field_norm_max");
  jacobian_ = device.kernel(kSource, "jacobian_determinant");
  transform_vectors_ = device.kernel(kSource, "transform_vectors");
  norm_groups_ = std::clamp<size_t>((static_cast<size_t>(voxels_) + kNormLocal - 1) / kNormLocal, 1, kNormMaxGroups);
  partial_ = DeviceBuffer<float>(device, norm_groups_);
  gain_ = DeviceBuffer<float>(device, 1);
  check_partial_ = DeviceBuffer<float>(device, norm_groups_ * kCheckTerms);
}

void DeformationOps::compose(const DeviceBuffer<float>& a, const DeviceBuffer<float>& b, DeviceBuffer<float>& out,
                             float scale) {
  const auto n = static_cast<size_t>(voxels_);
  require_size(a, 3 * n, "a");
  require_size(b, 3 * n, "b");
  require_size(out, 3 * n, "out");
  if (out.get() == a.get() || out.get() == b.get()) throw std::invalid_argument("deformation: compose in place");
  set_args(compose_, a, b, out, static_cast<int>(dims_[0]), static_cast<int>(dims_[1]), static_cast<int>(dims_[2]),
           scale);
  launch<1>(device_.queue(), compose_, {n}, {kGroup}, {}, EventMode::kNone);
}

int DeformationOps::squarings_for(double max_norm) {
  int k = 2;
  while (k < 30 && std::ldexp(max_norm, -k) > 0.5) ++k;
  return k;
}

void DeformationOps::exponential(const DeviceBuffer<float>& v, DeviceBuffer<float>& u, DeviceBuffer<float>& scratch,
                                 int squarings) {
  const auto n = static_cast<size_t>(voxels_);
  require_size(u, 3 * n, "u");
  require_size(scratch, 3 * n, "scratch");
  cl_command_queue q = device_.queue();
  if (squarings <= 0) {
    RTF_CL_CHECK(clEnqueueCopyBuffer(q, v.get(), u.get(), 0, 0, 3 * n * sizeof(float), 0, nullptr, nullptr));
    return;
  }
  // Squarings alternate between u and scratch so that the last one lands in u.
  DeviceBuffer<float>* target = squarings % 2 == 1 ? &u : &scratch;
  DeviceBuffer<float>* other = target == &u ? &scratch : &u;
  compose(v, v, *target, static_cast<float>(std::ldexp(1.0, -squarings)));
  for (int k = 1; k < squarings; ++k) {
    compose(*target, *target, *other, 1.0f);
    std::swap(target, other);
  }
}

void DeformationOps::warp_moments(const DeviceBuffer<float>& moving, const DeviceBuffer<float>& fixed,
                                  const DeviceBuffer<float>& u, DeviceBuffer<float>& moments) {
  const auto n = static_cast<size_t>(voxels_);
  require_size(moving, n, "moving");
  require_size(fixed, n, "fixed");
  require_size(u, 3 * n, "u");
  require_size(moments, 3 * n, "moments");
  set_args(warp_moments_, moving, fixed, u, static_cast<int>(dims_[0]), static_cast<int>(dims_[1]),
           static_cast<int>(dims_[2]), moments);
  launch<1>(device_.queue(), warp_moments_, {n}, {kGroup}, {}, EventMode::kNone);
}

void DeformationOps::fixed_moments(const DeviceBuffer<float>& fixed, DeviceBuffer<float>& moments) {
  const auto n = static_cast<size_t>(voxels_);
  require_size(fixed, n, "fixed");
  require_size(moments, 2 * n, "moments");
  set_args(fixed_moments_, fixed, static_cast<cl_ulong>(n), moments);
  launch<1>(device_.queue(), fixed_moments_, {n}, {kGroup}, {}, EventMode::kNone);
}

void DeformationOps::lncc_force(const DeviceBuffer<float>& fixed, const DeviceBuffer<float>& moments,
                                const DeviceBuffer<float>& local, const DeviceBuffer<float>& fixed_local,
                                float eps_fixed, float eps_moving, DeviceBuffer<float>& force,
                                DeviceBuffer<float>& cc) {
  const auto n = static_cast<size_t>(voxels_);
  require_size(fixed, n, "fixed");
  require_size(moments, n, "moments");
  require_size(local, 3 * n, "local");
  require_size(fixed_local, 2 * n, "fixed_local");
  require_size(force, 3 * n, "force");
  require_size(cc, n, "cc");
  set_args(lncc_force_, fixed, moments, local, fixed_local, static_cast<int>(dims_[0]), static_cast<int>(dims_[1]),
           static_cast<int>(dims_[2]), eps_fixed, eps_moving, force, cc);
  launch<1>(device_.queue(), lncc_force_, {n}, {kGroup}, {}, EventMode::kNone);
}

void DeformationOps::variance_indicator(const DeviceBuffer<float>& fixed_local, float eps, DeviceBuffer<float>& out) {
  const auto n = static_cast<size_t>(voxels_);
  require_size(fixed_local, 2 * n, "fixed_local");
  require_size(out, n, "out");
  set_args(variance_indicator_, fixed_local, static_cast<cl_ulong>(n), eps, out);
  launch<1>(device_.queue(), variance_indicator_, {n}, {kGroup}, {}, EventMode::kNone);
}

void DeformationOps::demons_force(const DeviceBuffer<float>& fixed, const DeviceBuffer<float>& moments, float alpha,
                                  DeviceBuffer<float>& force, DeviceBuffer<float>& cost) {
  const auto n = static_cast<size_t>(voxels_);
  require_size(fixed, n, "fixed");
  require_size(moments, n, "moments");
  require_size(force, 3 * n, "force");
  require_size(cost, n, "cost");
  set_args(demons_force_, fixed, moments, static_cast<int>(dims_[0]), static_cast<int>(dims_[1]),
           static_cast<int>(dims_[2]), alpha * alpha, force, cost);
  launch<1>(device_.queue(), demons_force_, {n}, {kGroup}, {}, EventMode::kNone);
}

void DeformationOps::scale_intensity(DeviceBuffer<float>& v, float a, float b) {
  const auto n = static_cast<size_t>(voxels_);
  require_size(v, n, "v");
  set_args(scale_intensity_, v, static_cast<cl_ulong>(n), a, b);
  launch<1>(device_.queue(), scale_intensity_, {n}, {kGroup}, {}, EventMode::kNone);
}

void DeformationOps::add_scaled(DeviceBuffer<float>& v, const DeviceBuffer<float>& f, float scale) {
  const auto count = 3 * static_cast<size_t>(voxels_);
  require_size(v, count, "v");
  require_size(f, count, "f");
  set_args(add_scaled_, v, f, static_cast<cl_ulong>(count), scale);
  launch<1>(device_.queue(), add_scaled_, {count}, {kGroup}, {}, EventMode::kNone);
}

void DeformationOps::add_capped(DeviceBuffer<float>& v, const DeviceBuffer<float>& f, float gain, float step) {
  const auto n = static_cast<size_t>(voxels_);
  require_size(v, 3 * n, "v");
  require_size(f, 3 * n, "f");
  cl_command_queue q = device_.queue();
  set_args(norm_max_, f, static_cast<cl_ulong>(n), partial_, LocalMemory{kNormLocal * sizeof(float)});
  launch<1>(q, norm_max_, {norm_groups_ * kNormLocal}, {kNormLocal}, {}, EventMode::kNone);
  set_args(capped_gain_, partial_, static_cast<int>(norm_groups_), gain, step, gain_);
  launch<1>(q, capped_gain_, {1}, {1}, {}, EventMode::kNone);
  set_args(add_scaled_by_, v, f, static_cast<cl_ulong>(3 * n), gain_);
  launch<1>(q, add_scaled_by_, {3 * n}, {kGroup}, {}, EventMode::kNone);
}

double DeformationOps::max_norm(const DeviceBuffer<float>& f) {
  const auto n = static_cast<size_t>(voxels_);
  require_size(f, 3 * n, "f");
  set_args(norm_max_, f, static_cast<cl_ulong>(n), partial_, LocalMemory{kNormLocal * sizeof(float)});
  launch<1>(device_.queue(), norm_max_, {norm_groups_ * kNormLocal}, {kNormLocal}, {}, EventMode::kNone);
  std::vector<float> partial(norm_groups_);
  partial_.read(device_.queue(), partial);
  float best = 0.0f;
  for (float p : partial) best = std::isnan(p) ? p : std::max(best, p);
  return best;
}

void DeformationOps::jacobian(const DeviceBuffer<float>& u, DeviceBuffer<float>& det) {
  const auto n = static_cast<size_t>(voxels_);
  require_size(u, 3 * n, "u");
  require_size(det, n, "det");
  set_args(jacobian_, u, static_cast<int>(dims_[0]), static_cast<int>(dims_[1]), static_cast<int>(dims_[2]), det);
  launch<1>(device_.queue(), jacobian_, {n}, {kGroup}, {}, EventMode::kNone);
}

void DeformationOps::transform_vectors(const DeviceBuffer<float>& f, DeviceBuffer<float>& out,
                                       const Eigen::Matrix3d& m) {
  const auto n = static_cast<size_t>(voxels_);
  require_size(f, 3 * n, "f");
  require_size(out, 3 * n, "out");
  set_args(transform_vectors_, f, out, static_cast<cl_ulong>(n), row(m, 0), row(m, 1), row(m, 2));
  launch<1>(device_.queue(), transform_vectors_, {n}, {kGroup}, {}, EventMode::kNone);
}

WarpCheck DeformationOps::warp_check(const DeviceBuffer<float>& det, const DeviceBuffer<float>& residual,
                                     const DeviceBuffer<float>& mask_image) {
  const auto n = static_cast<size_t>(voxels_);
  require_size(det, n, "det");
  require_size(residual, 3 * n, "residual");
  require_size(mask_image, n, "mask_image");
  set_args(warp_check_, det, residual, mask_image, static_cast<cl_ulong>(n), check_partial_,
           LocalMemory{kNormLocal * kCheckTerms * sizeof(float)});
  launch<1>(device_.queue(), warp_check_, {norm_groups_ * kNormLocal}, {kNormLocal}, {}, EventMode::kNone);
  std::vector<float> p(norm_groups_ * kCheckTerms);
  check_partial_.read(device_.queue(), p);
  WarpCheck c;
  c.min_det = INFINITY;
  c.max_det = -INFINITY;
  double sum = 0.0;
  for (size_t g = 0; g < norm_groups_; ++g) {
    const float* q = p.data() + g * kCheckTerms;
    c.min_det = std::min(c.min_det, static_cast<double>(q[0]));
    c.max_det = std::max(c.max_det, static_cast<double>(q[1]));
    c.folded += std::llround(q[2]);
    c.folded_in_mask += std::llround(q[3]);
    c.in_mask += std::llround(q[4]);
    sum += q[5];
    c.max_residual = std::max(c.max_residual, static_cast<double>(q[6]));
  }
  c.mean_residual = c.in_mask > 0 ? sum / static_cast<double>(c.in_mask) : 0.0;
  return c;
}

}  // namespace rtf
