// DeviceGlm: buffers, uploads of the per-call arrays, the accumulate and solve launches.
#include "core/glm/device_glm.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "core/device/launch.hpp"
#include "core/device/vector_width.hpp"

namespace rtf {

namespace {

constexpr const char* kSource = "glm.cl";
constexpr size_t kLocal = 128;

template <typename T>
void upload(cl_command_queue q, const DeviceBuffer<T>& buffer, const std::vector<T>& host,
            std::vector<ClEvent>& events) {
  if (host.empty()) return;
  if (host.size() > buffer.size()) throw std::logic_error("GLM upload larger than its buffer");
  ClEvent e;
  RTF_CL_CHECK(
      clEnqueueWriteBuffer(q, buffer.get(), CL_FALSE, 0, host.size() * sizeof(T), host.data(), 0, nullptr, e.out()));
  events.push_back(std::move(e));
}

}  // namespace

DeviceGlm::DeviceGlm(Device& device, DeviceGlmSpec spec) : device_(device), spec_(std::move(spec)) {
  const int p = spec_.columns;
  if (p < 1 || spec_.voxels < 1) throw std::invalid_argument("GLM: needs at least one column and one voxel");
  if (spec_.constant_column >= p) throw std::invalid_argument("GLM: constant column out of range");
  if (spec_.max_volumes_per_call < 1) throw std::invalid_argument("GLM: max_volumes_per_call must be >= 1");
  for (const GlmContrast& c : spec_.contrasts) {
    if (c.weights.cols() != p) {
      throw std::invalid_argument(
          fmt::format("contrast {}: {} weights for a design of {} columns", c.name, c.weights.cols(), p));
    }
    if (c.is_f()) {
      ++f_count_;
      f_rows_ = std::max(f_rows_, static_cast<int>(c.weights.rows()));
    } else {
      ++t_count_;
    }
  }
  vec_ = spec_.vector_width > 0 ? spec_.vector_width : preferred_vector_width(device);
  if (vec_ != 1 && vec_ != 2 && vec_ != 4 && vec_ != 8 && vec_ != 16) {
    throw std::invalid_argument(fmt::format("GLM: vector width {} (0, 1, 2, 4, 8 or 16)", spec_.vector_width));
  }
  const auto v = static_cast<size_t>(spec_.voxels);
  const auto terms = static_cast<size_t>(p + 1);
  acc_ = DeviceBuffer<float>(device, terms * v);
  comp_ = DeviceBuffer<float>(device, terms * v);
  shift_ = DeviceBuffer<float>(device, v);
  const auto max_count = static_cast<size_t>(spec_.max_volumes_per_call);
  slots_ = DeviceBuffer<cl_int>(device, max_count);
  prev_ = DeviceBuffer<cl_int>(device, max_count);
  rows_ = DeviceBuffer<float>(device, max_count * static_cast<size_t>(p));
  pinv_ = DeviceBuffer<float>(device, static_cast<size_t>(2 * p * p));  // hi, then lo parts
  tcon_ = DeviceBuffer<float>(device, static_cast<size_t>(std::max(t_count_, 1) * p));
  tvar_ = DeviceBuffer<float>(device, static_cast<size_t>(std::max(t_count_, 1)));
  fmat_ = DeviceBuffer<float>(device, static_cast<size_t>(std::max(f_count_, 1) * f_rows_ * p));
  fmid_ = DeviceBuffer<float>(device, static_cast<size_t>(std::max(f_count_, 1) * f_rows_ * f_rows_));
  fq_ = DeviceBuffer<cl_int>(device, static_cast<size_t>(std::max(f_count_, 1)));
  mask_ = DeviceBuffer<uint8_t>(device, v);
  if (spec_.mask) {
    if (spec_.mask->size() != v) throw std::invalid_argument("GLM: the mask's size differs from the volume's");
    mask_.write(device.queue(), *spec_.mask);
  }
  beta_ = DeviceBuffer<float>(device, static_cast<size_t>(p) * v);
  sigma2_ = DeviceBuffer<float>(device, v);
  con_ = DeviceBuffer<float>(device, static_cast<size_t>(std::max(t_count_, 1)) * v);
  t_ = DeviceBuffer<float>(device, static_cast<size_t>(std::max(t_count_, 1)) * v);
  f_ = DeviceBuffer<float>(device, static_cast<size_t>(std::max(f_count_, 1)) * v);
  // The per-call tables (slots, prev, rows) go to the constant cache when they fit in 32 KiB (OpenCL guarantees 64).
  const size_t table_bytes = max_count * (2 * sizeof(cl_int) + static_cast<size_t>(p) * sizeof(float));
  const std::vector<std::string> defines{fmt::format("P={}", p),
                                         fmt::format("K={}", t_count_),
                                         fmt::format("NF={}", f_count_),
                                         fmt::format("Q={}", f_rows_),
                                         fmt::format("CONST_COL={}", spec_.constant_column),
                                         fmt::format("COMPENSATED={}", spec_.compensated ? 1 : 0),
                                         table_bytes <= 32768 ? "TABLES_SPACE=__constant" : "TABLES_SPACE=__global",
                                         fmt::format("VEC={}", vec_)};
  accumulate_kernel_ = device.kernel(kSource, "glm_accumulate", defines);
  solve_kernel_ = device.kernel(kSource, "glm_solve", defines);
  // Contrast weights never change: upload once.
  for (const GlmContrast& c : spec_.contrasts) {
    if (c.is_f()) continue;
    for (int j = 0; j < p; ++j) host_tcon_.push_back(static_cast<float>(c.weights(0, j)));
  }
  if (!host_tcon_.empty()) tcon_.write(device.queue(), host_tcon_);
}

size_t DeviceGlm::work_items() const {
  return (static_cast<size_t>(spec_.voxels) + static_cast<size_t>(vec_) - 1) / static_cast<size_t>(vec_);
}

size_t DeviceGlm::local_size() const {
  return vec_ > 1 ? size_t{8} : kLocal;  // CPU devices: small groups of vector work-items
}

void DeviceGlm::wait_for_uploads() {
  if (uploads_.empty()) return;
  std::vector<cl_event> raw;
  for (const ClEvent& e : uploads_) raw.push_back(e.get());
  RTF_CL_CHECK(clWaitForEvents(static_cast<cl_uint>(raw.size()), raw.data()));
  uploads_.clear();
}

void DeviceGlm::reset(const DeviceBuffer<float>& volumes, int64_t slot) {
  const float zero = 0.0f;
  RTF_CL_CHECK(
      clEnqueueFillBuffer(device_.queue(), acc_.get(), &zero, sizeof(zero), 0, acc_.bytes(), 0, nullptr, nullptr));
  RTF_CL_CHECK(
      clEnqueueFillBuffer(device_.queue(), comp_.get(), &zero, sizeof(zero), 0, comp_.bytes(), 0, nullptr, nullptr));
  if (spec_.constant_column < 0) {
    RTF_CL_CHECK(clEnqueueFillBuffer(device_.queue(), shift_.get(), &zero, sizeof(zero), 0, shift_.bytes(), 0, nullptr,
                                     nullptr));
    return;
  }
  const size_t offset = static_cast<size_t>(slot) * static_cast<size_t>(spec_.voxels) * sizeof(float);
  if (slot < 0 || offset + shift_.bytes() > volumes.bytes()) throw std::out_of_range("GLM: shift volume out of range");
  RTF_CL_CHECK(clEnqueueCopyBuffer(device_.queue(), volumes.get(), shift_.get(), offset, 0, shift_.bytes(), 0, nullptr,
                                   nullptr));
}

void DeviceGlm::accumulate(const DeviceBuffer<float>& volumes, std::span<const int64_t> slots,
                           std::span<const int64_t> prev_slots, const Eigen::MatrixXd& rows, double rho) {
  const auto count = static_cast<int64_t>(slots.size());
  if (count == 0) return;
  if (count > spec_.max_volumes_per_call) {
    throw std::invalid_argument(
        fmt::format("GLM: {} volumes in one call, at most {}", count, spec_.max_volumes_per_call));
  }
  if (static_cast<int64_t>(prev_slots.size()) != count || rows.rows() != count || rows.cols() != spec_.columns) {
    throw std::invalid_argument("GLM: slots, previous slots and design rows differ in number");
  }
  if (!(std::abs(rho) < 1.0)) throw std::invalid_argument("GLM: the AR(1) coefficient must lie in (-1, 1)");
  const int64_t held = static_cast<int64_t>(volumes.size()) / spec_.voxels;
  wait_for_uploads();
  host_slots_.assign(slots.begin(), slots.end());
  host_prev_.assign(prev_slots.begin(), prev_slots.end());
  for (int64_t k = 0; k < count; ++k) {
    if (slots[static_cast<size_t>(k)] < 0 || slots[static_cast<size_t>(k)] >= held ||
        prev_slots[static_cast<size_t>(k)] >= held) {
      throw std::out_of_range(
          fmt::format("GLM: slot {} outside the buffer's {} volumes", slots[static_cast<size_t>(k)], held));
    }
  }
  host_rows_.resize(static_cast<size_t>(count * spec_.columns));
  for (int64_t k = 0; k < count; ++k) {
    for (int j = 0; j < spec_.columns; ++j) {
      host_rows_[static_cast<size_t>(k * spec_.columns + j)] = static_cast<float>(rows(k, j));
    }
  }
  upload(device_.queue(), slots_, host_slots_, uploads_);
  upload(device_.queue(), prev_, host_prev_, uploads_);
  upload(device_.queue(), rows_, host_rows_, uploads_);
  const int n = static_cast<int>(count), voxels = static_cast<int>(spec_.voxels);
  const auto r = static_cast<float>(rho);
  const auto first_scale = static_cast<float>(std::sqrt(1.0 - rho * rho));
  set_args(accumulate_kernel_, volumes, slots_, prev_, rows_, n, voxels, r, first_scale, shift_, acc_, comp_);
  ClEvent done =
      launch<1>(device_.queue(), accumulate_kernel_, {work_items()}, {local_size()}, {}, profile_mode(profile_));
  if (profile_) profile_->add("glm accumulate", done);
}

ClEvent DeviceGlm::solve(const GlmModel& model) {
  const int p = spec_.columns;
  if (model.pinv_xtx.rows() != p || static_cast<int>(model.t_variance.size()) != t_count_ ||
      static_cast<int>(model.f_middle.size()) != f_count_) {
    throw std::invalid_argument("GLM: the model does not match this GLM's columns and contrasts");
  }
  wait_for_uploads();
  host_pinv_.resize(static_cast<size_t>(2 * p * p));
  for (int i = 0; i < p; ++i) {
    for (int j = 0; j < p; ++j) {
      const double value = model.pinv_xtx(i, j);
      const auto hi = static_cast<float>(value);
      host_pinv_[static_cast<size_t>(i * p + j)] = hi;
      host_pinv_[static_cast<size_t>(p * p + i * p + j)] = static_cast<float>(value - static_cast<double>(hi));
    }
  }
  host_tvar_.assign(static_cast<size_t>(std::max(t_count_, 1)), 0.0f);
  for (int k = 0; k < t_count_; ++k) host_tvar_[static_cast<size_t>(k)] = static_cast<float>(model.t_variance[k]);
  const size_t q = static_cast<size_t>(f_rows_);
  host_fmat_.assign(static_cast<size_t>(std::max(f_count_, 1)) * q * static_cast<size_t>(p), 0.0f);
  host_fmid_.assign(static_cast<size_t>(std::max(f_count_, 1)) * q * q, 0.0f);
  host_fq_.assign(static_cast<size_t>(std::max(f_count_, 1)), 0);
  for (int f = 0; f < f_count_; ++f) {
    const Eigen::MatrixXd& c = model.f_rows[static_cast<size_t>(f)];
    const Eigen::MatrixXd& m = model.f_middle[static_cast<size_t>(f)];
    for (Eigen::Index r = 0; r < c.rows(); ++r) {
      for (int j = 0; j < p; ++j) {
        host_fmat_[(static_cast<size_t>(f) * q + static_cast<size_t>(r)) * static_cast<size_t>(p) +
                   static_cast<size_t>(j)] = static_cast<float>(c(r, j));
      }
      for (Eigen::Index s = 0; s < c.rows(); ++s) {
        host_fmid_[(static_cast<size_t>(f) * q + static_cast<size_t>(r)) * q + static_cast<size_t>(s)] =
            static_cast<float>(m(r, s));
      }
    }
    host_fq_[static_cast<size_t>(f)] =
        model.f_estimable[static_cast<size_t>(f)] ? static_cast<cl_int>(model.f_dof[static_cast<size_t>(f)]) : 0;
  }
  upload(device_.queue(), pinv_, host_pinv_, uploads_);
  upload(device_.queue(), tvar_, host_tvar_, uploads_);
  upload(device_.queue(), fmat_, host_fmat_, uploads_);
  upload(device_.queue(), fmid_, host_fmid_, uploads_);
  upload(device_.queue(), fq_, host_fq_, uploads_);
  const int voxels = static_cast<int>(spec_.voxels);
  const auto dof = static_cast<float>(model.dof);
  const int use_mask = spec_.mask ? 1 : 0;
  set_args(solve_kernel_, acc_, comp_, voxels, pinv_, shift_, dof, mask_, use_mask, tcon_, tvar_, fmat_, fmid_, fq_,
           beta_, sigma2_, con_, t_, f_);
  ClEvent done = launch<1>(device_.queue(), solve_kernel_, {work_items()}, {local_size()});
  if (profile_) profile_->add("glm solve", done);
  return done;
}

}  // namespace rtf
