// RigidRegistration: per-level smoothed reference and gradients, the device sums of each iteration, reslicing.
#include "core/registration/rigid_registration.hpp"

#include <fmt/format.h>

#include <Eigen/LU>
#include <algorithm>
#include <stdexcept>

#include "core/device/launch.hpp"

namespace rtf {

namespace {

constexpr const char* kSource = "rigid_register.cl";
// GPUs: work-groups of 128 reduce their items' sums in local memory, at most 256 groups. CPU devices (PoCL): each
// work-item writes its own partial row, 64 items per compute unit (barriers cost more than the extra rows there).
constexpr size_t kGpuGroupSize = 128;
constexpr size_t kGpuMaxGroups = 256;
constexpr size_t kCpuItemsPerComputeUnit = 64;

cl_float4 row(const Eigen::Matrix<double, 3, 4>& m, int r) {
  return cl_float4{{static_cast<float>(m(r, 0)), static_cast<float>(m(r, 1)), static_cast<float>(m(r, 2)),
                    static_cast<float>(m(r, 3))}};
}

std::vector<std::string> defines(int params, Interpolation interpolation, bool mask, bool item_partials = false) {
  std::vector<std::string> d{fmt::format("NPARAMS={}", params)};
  if (interpolation == Interpolation::kCubic) d.emplace_back("CUBIC");
  if (mask) d.emplace_back("HAS_MASK");
  if (item_partials) d.emplace_back("ITEM_PARTIALS");
  return d;
}

}  // namespace

struct RigidRegistration::Level {
  RegistrationLevel spec;
  std::optional<GaussianSmoother> smoother;
  DeviceBuffer<float> reference;    // smoothed reference (unused without smoothing: raw_ is read)
  DeviceBuffer<cl_float4> refgrad;  // (gradient, value) of the level's reference
  DeviceBuffer<float> moving;       // smoothed moving volume
  DeviceBuffer<float> partial;      // [groups][terms]
  ClKernel sums_kernel;
  ClKernel reduce_kernel;
  int px = 0, py = 0, npoints = 0;
  size_t groups = 1;      // work-groups of the sums kernel (rows of `partial`)
  size_t group_size = 1;  // work-items per group
};

RigidRegistration::RigidRegistration(Device& device, const ImageHeader& grid, RegistrationOptions options,
                                     std::optional<std::span<const uint8_t>> mask)
    : device_(device), grid_(grid), options_(std::move(options)), voxels_(grid.voxels_per_volume()) {
  for (int64_t d : grid.dims) {
    if (d < 4) throw std::invalid_argument(fmt::format("registration needs at least 4 voxels per axis, got {}", d));
  }
  if (voxels_ > (int64_t{1} << 30)) throw std::invalid_argument("registration: volume too large");
  if (std::abs(grid.affine.topLeftCorner<3, 3>().determinant()) < 1e-9) {
    throw std::invalid_argument("registration: the grid's affine is not invertible");
  }
  item_partials_ = device.info().is_cpu();
  if (options_.levels.empty()) throw std::invalid_argument("registration: no levels");
  if (options_.edge_margin_voxels < 1) throw std::invalid_argument("registration: the edge margin must be >= 1");
  const Eigen::Vector4d mid(0.5 * static_cast<double>(grid.dims[0] - 1), 0.5 * static_cast<double>(grid.dims[1] - 1),
                            0.5 * static_cast<double>(grid.dims[2] - 1), 1.0);
  centre_ = (grid.affine * mid).head<3>();
  const auto n = static_cast<size_t>(voxels_);
  raw_ = DeviceBuffer<float>(device, n);
  moving_raw_ = DeviceBuffer<float>(device, n);
  input_ = DeviceBuffer<float>(device, n);
  if (mask) {
    if (mask->size() != n) throw std::invalid_argument("registration: mask size differs from the grid");
    if (std::none_of(mask->begin(), mask->end(), [](uint8_t m) { return m != 0; })) {
      throw std::invalid_argument("registration: the mask is empty");
    }
    mask_.emplace(device, n, CL_MEM_READ_ONLY);
    mask_->write(device.queue(), *mask);
  }
  const int params = options_.intensity_model ? kMaxParams : kRigidParams;
  const int terms = normal_equation_terms(params);
  sums_ = DeviceBuffer<float>(device, static_cast<size_t>(terms));
  host_sums_.resize(static_cast<size_t>(terms));
  gradient_kernel_ = device.kernel(kSource, "reference_gradient");
  fill_kernel_ = device.kernel(kSource, "copy_filling_non_finite");
  non_finite_count_ = DeviceBuffer<cl_int>(device, 1);
  reslice_kernels_[0] = device.kernel(kSource, "reslice", defines(kRigidParams, Interpolation::kTrilinear, false));
  reslice_kernels_[1] = device.kernel(kSource, "reslice", defines(kRigidParams, Interpolation::kCubic, false));
  for (const RegistrationLevel& spec : options_.levels) {
    if (spec.stride < 1) throw std::invalid_argument("registration: level stride must be >= 1");
    auto level = std::make_unique<Level>();
    level->spec = spec;
    if (spec.smoothing_fwhm_mm > 0) {
      SmoothingSpec smoothing;
      smoothing.fwhm_mm = spec.smoothing_fwhm_mm;
      level->smoother.emplace(device, grid.dims, grid.voxel_mm, smoothing);
      level->reference = DeviceBuffer<float>(device, n);
      level->moving = DeviceBuffer<float>(device, n);
    }
    level->refgrad = DeviceBuffer<cl_float4>(device, n);
    const int64_t margin = options_.edge_margin_voxels;
    auto points = [&](int64_t d) { return static_cast<int>((d - 2 * margin + spec.stride - 1) / spec.stride); };
    level->px = points(grid.dims[0]);
    level->py = points(grid.dims[1]);
    const int pz = points(grid.dims[2]);
    if (level->px < 1 || level->py < 1 || pz < 1) {
      throw std::invalid_argument(
          fmt::format("registration: an edge margin of {} voxels leaves no voxel to sample", margin));
    }
    level->npoints = level->px * level->py * pz;
    if (item_partials_) {
      level->group_size = 1;
      level->groups = std::clamp<size_t>(static_cast<size_t>(level->npoints), 1,
                                         kCpuItemsPerComputeUnit * std::max<size_t>(device.info().compute_units, 1));
    } else {
      level->group_size = kGpuGroupSize;
      level->groups = std::clamp<size_t>((static_cast<size_t>(level->npoints) + kGpuGroupSize - 1) / kGpuGroupSize, 1,
                                         kGpuMaxGroups);
    }
    level->partial = DeviceBuffer<float>(device, level->groups * static_cast<size_t>(terms));
    const auto d = defines(params, spec.interpolation, mask_.has_value(), item_partials_);
    level->sums_kernel = device.kernel(kSource, "registration_sums", d);
    level->reduce_kernel = device.kernel(kSource, "reduce_partials", d);
    levels_.push_back(std::move(level));
  }
}

RigidRegistration::~RigidRegistration() = default;

void RigidRegistration::copy_filling_non_finite(const DeviceBuffer<float>& src, size_t offset,
                                                DeviceBuffer<float>& dst) {
  if (offset + static_cast<size_t>(voxels_) > src.size()) throw std::out_of_range("registration: volume range");
  const cl_int zero = 0;
  RTF_CL_CHECK(clEnqueueFillBuffer(device_.queue(), non_finite_count_.get(), &zero, sizeof(zero), 0, sizeof(zero), 0,
                                   nullptr, nullptr));
  set_args(fill_kernel_, src, static_cast<cl_ulong>(offset), dst, static_cast<int>(grid_.dims[0]),
           static_cast<int>(grid_.dims[1]), static_cast<int>(grid_.dims[2]), non_finite_count_);
  ClEvent done =
      launch<1>(device_.queue(), fill_kernel_, {static_cast<size_t>(voxels_)}, {128}, {}, profile_mode(profile_));
  if (profile_) profile_->add("copy volume", done);
  RTF_CL_CHECK(clEnqueueReadBuffer(device_.queue(), non_finite_count_.get(), CL_FALSE, 0, sizeof(cl_int),
                                   &host_non_finite_count_, 0, nullptr, nullptr));
}

void RigidRegistration::set_reference(const DeviceBuffer<float>& volume, size_t offset) {
  has_reference_ = false;
  copy_filling_non_finite(volume, offset, raw_);
  RTF_CL_CHECK(clFinish(device_.queue()));
  if (static_cast<double>(host_non_finite_count_) > kMaxNonFiniteFraction * static_cast<double>(voxels_)) {
    throw std::invalid_argument(
        fmt::format("registration reference: {} of {} voxels are NaN or infinite", host_non_finite_count_, voxels_));
  }
  const Eigen::Matrix3d g = grid_.affine.topLeftCorner<3, 3>().inverse().transpose();
  Eigen::Matrix<double, 3, 4> g34 = Eigen::Matrix<double, 3, 4>::Zero();
  g34.leftCols<3>() = g;
  const int nx = static_cast<int>(grid_.dims[0]), ny = static_cast<int>(grid_.dims[1]),
            nz = static_cast<int>(grid_.dims[2]);
  for (auto& level : levels_) {
    const DeviceBuffer<float>* source = &raw_;
    if (level->smoother) {
      level->smoother->enqueue(raw_, level->reference, 1);
      source = &level->reference;
    }
    set_args(gradient_kernel_, *source, level->refgrad, nx, ny, nz, row(g34, 0), row(g34, 1), row(g34, 2));
    launch<1>(device_.queue(), gradient_kernel_, {static_cast<size_t>(voxels_)}, {64}, {}, EventMode::kNone);
  }
  RTF_CL_CHECK(clFinish(device_.queue()));
  has_reference_ = true;
}

void RigidRegistration::set_reference(std::span<const float> volume) {
  if (volume.size() != static_cast<size_t>(voxels_)) throw std::invalid_argument("registration: reference size");
  input_.write(device_.queue(), volume);
  set_reference(input_, 0);
}

void RigidRegistration::load_moving(const DeviceBuffer<float>& moving, size_t offset) {
  copy_filling_non_finite(moving, offset, moving_raw_);
  for (auto& level : levels_) {
    if (!level->smoother) continue;
    ClEvent first;
    ClEvent last = level->smoother->enqueue(moving_raw_, level->moving, 1, profile_ ? &first : nullptr);
    if (profile_) profile_->add("smooth moving", std::move(first), std::move(last));
  }
}

NormalEquations RigidRegistration::sums(int level_index, const Eigen::Matrix4d& transform,
                                        const Eigen::Vector4d& intensity) {
  Level& level = *levels_.at(static_cast<size_t>(level_index));
  const DeviceBuffer<float>& moving = level.smoother ? level.moving : moving_raw_;
  const Eigen::Matrix<double, 3, 4> to_moving = (grid_.affine.inverse() * transform * grid_.affine).topRows<3>();
  Eigen::Matrix<double, 3, 4> to_d = grid_.affine.topRows<3>();
  to_d.col(3) -= centre_;
  const cl_float4 lambda{{static_cast<float>(intensity[0]), static_cast<float>(intensity[1]),
                          static_cast<float>(intensity[2]), static_cast<float>(intensity[3])}};
  const int nx = static_cast<int>(grid_.dims[0]), ny = static_cast<int>(grid_.dims[1]),
            nz = static_cast<int>(grid_.dims[2]);
  const float inv_radius = static_cast<float>(1.0 / options_.radius_mm);
  const int first = static_cast<int>(options_.edge_margin_voxels);
  const LocalMemory scratch{level.group_size * sizeof(float)};
  if (mask_) {
    set_args(level.sums_kernel, level.refgrad, moving, *mask_, nx, ny, nz, first, level.spec.stride, level.px, level.py,
             level.npoints, row(to_moving, 0), row(to_moving, 1), row(to_moving, 2), row(to_d, 0), row(to_d, 1),
             row(to_d, 2), lambda, inv_radius, level.partial, scratch);
  } else {
    set_args(level.sums_kernel, level.refgrad, moving, nx, ny, nz, first, level.spec.stride, level.px, level.py,
             level.npoints, row(to_moving, 0), row(to_moving, 1), row(to_moving, 2), row(to_d, 0), row(to_d, 1),
             row(to_d, 2), lambda, inv_radius, level.partial, scratch);
  }
  ClEvent summed = launch<1>(device_.queue(), level.sums_kernel, {level.groups * level.group_size}, {level.group_size},
                             {}, profile_mode(profile_));
  set_args(level.reduce_kernel, level.partial, static_cast<int>(level.groups), sums_);
  ClEvent reduced = launch<1>(device_.queue(), level.reduce_kernel, {host_sums_.size()}, {host_sums_.size()}, {},
                              profile_mode(profile_));
  ClEvent read;
  RTF_CL_CHECK(clEnqueueReadBuffer(device_.queue(), sums_.get(), CL_TRUE, 0, sums_.bytes(), host_sums_.data(), 0,
                                   nullptr, profile_ ? read.out() : nullptr));
  if (profile_) {
    profile_->add(fmt::format("sums level {}", level_index), summed);
    profile_->add("reduce sums", reduced);
    profile_->add("read sums", read);
  }

  const int n = options_.intensity_model ? kMaxParams : kRigidParams;
  NormalEquations eq;
  size_t k = 0;
  for (int a = 0; a < n; ++a) {
    for (int b = a; b < n; ++b) eq.h(a, b) = eq.h(b, a) = host_sums_[k++];
  }
  for (int a = 0; a < n; ++a) eq.b[a] = host_sums_[k++];
  eq.sum_squared_residual = host_sums_[k++];
  eq.count = static_cast<int64_t>(host_sums_[k] + 0.5f);
  return eq;
}

RegistrationResult RigidRegistration::register_volume(const DeviceBuffer<float>& moving, size_t offset,
                                                      const Eigen::Matrix4d& initial) {
  if (!has_reference_) throw std::logic_error("registration: set_reference() first");
  load_moving(moving, offset);
  const SumsProvider provider = [this](int level, const Eigen::Matrix4d& transform, const Eigen::Vector4d& intensity) {
    return sums(level, transform, intensity);
  };
  RegistrationResult result = gauss_newton_register(provider, options_, initial, centre_);
  result.non_finite_voxels = host_non_finite_count_;  // read before the first iteration's blocking read returned
  if (static_cast<double>(result.non_finite_voxels) > kMaxNonFiniteFraction * static_cast<double>(voxels_)) {
    result.converged = false;
    result.failure = fmt::format("{} of {} voxels are NaN or infinite", result.non_finite_voxels, voxels_);
  }
  return result;
}

RegistrationResult RigidRegistration::register_volume(std::span<const float> moving, const Eigen::Matrix4d& initial) {
  if (moving.size() != static_cast<size_t>(voxels_)) throw std::invalid_argument("registration: volume size");
  input_.write(device_.queue(), moving);
  return register_volume(input_, 0, initial);
}

ClEvent RigidRegistration::reslice(const DeviceBuffer<float>& moving, size_t offset, const Eigen::Matrix4d& transform,
                                   DeviceBuffer<float>& out, Interpolation interpolation, float outside) {
  if (offset + static_cast<size_t>(voxels_) > moving.size() || out.size() < static_cast<size_t>(voxels_)) {
    throw std::out_of_range("reslice: buffer range");
  }
  const ClKernel& kernel = reslice_kernels_[interpolation == Interpolation::kCubic ? 1 : 0];
  const Eigen::Matrix<double, 3, 4> to_moving = (grid_.affine.inverse() * transform * grid_.affine).topRows<3>();
  const int nx = static_cast<int>(grid_.dims[0]), ny = static_cast<int>(grid_.dims[1]),
            nz = static_cast<int>(grid_.dims[2]);
  set_args(kernel, moving, static_cast<cl_ulong>(offset), out, nx, ny, nz, row(to_moving, 0), row(to_moving, 1),
           row(to_moving, 2), outside);
  ClEvent done = launch<1>(device_.queue(), kernel, {static_cast<size_t>(voxels_)}, {64});
  if (profile_) profile_->add("reslice", done);
  return done;
}

}  // namespace rtf
