// LinearRegistration: the two images on the device, each level's smoothed fixed image and moving gradient, the sums.
#include "core/registration/linear_registration.hpp"

#include <fmt/format.h>

#include <Eigen/LU>
#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "core/device/buffer.hpp"
#include "core/device/launch.hpp"
#include "core/filters/gaussian_smoothing.hpp"
#include "core/registration/resample.hpp"

namespace rtf {

namespace {

constexpr const char* kSource = "linear_register.cl";
constexpr size_t kGpuGroupSize = 128;
constexpr size_t kGpuMaxGroups = 256;
constexpr size_t kCpuItemsPerComputeUnit = 64;
constexpr double kMaxNonFiniteFraction = 0.1;
constexpr int kMiHistogramTerms = kMiBins * kMiBins + 1;  // kernels/mutual_information.cl's HIST_TERMS
constexpr int kMiGradientTerms = 13;                      // and GRAD_TERMS
constexpr int kLnccTerms = 14;                            // kernels/linear_lncc.cl's LNCC_TERMS
constexpr double kLnccRelativeEps = 1e-5;                 // local variances below this share of max^2 are not counted

cl_float4 row(const Eigen::Matrix<double, 3, 4>& m, int r) {
  return cl_float4{{static_cast<float>(m(r, 0)), static_cast<float>(m(r, 1)), static_cast<float>(m(r, 2)),
                    static_cast<float>(m(r, 3))}};
}

// Throws std::invalid_argument unless every axis has 4 voxels or more, the grid is not too large and its affine is
// invertible.
void check_grid(const ImageHeader& grid, const char* what) {
  for (int64_t d : grid.dims) {
    if (d < 4) throw std::invalid_argument(fmt::format("registration: the {} image has an axis of {} voxels", what, d));
  }
  if (grid.voxels_per_volume() > (int64_t{1} << 30)) {
    throw std::invalid_argument(fmt::format("registration: the {} image is too large", what));
  }
  inverse_affine(grid.affine, fmt::format("registration: the {} image", what));
}

// A 3D image checked and uploaded.
std::shared_ptr<const DeviceVolume> checked_upload(Device& device, const Image& image, const char* what) {
  if (image.nt() != 1) {
    throw std::invalid_argument(
        fmt::format("registration: the {} image must be 3D, it has {} volumes", what, image.nt()));
  }
  check_grid(image.header(), what);
  return DeviceVolume::upload(device, image);
}

// Throws std::invalid_argument when too many voxels are not finite or the (masked) range is empty.
void check_values(const DeviceVolume& v, float lo, float hi, const char* what) {
  const auto n = static_cast<double>(v.data.size());
  if (static_cast<double>(v.non_finite) > kMaxNonFiniteFraction * n) {
    throw std::invalid_argument(fmt::format("registration: {} of {} voxels of the {} image are NaN or infinite",
                                            v.non_finite, v.data.size(), what));
  }
  if (!(hi > lo)) throw std::invalid_argument(fmt::format("registration: the {} image is constant", what));
}

}  // namespace

// Where one evaluation samples: the fixed grid's lattice at the level's stride, and the matrices taking its voxels to
// moving voxel coordinates and to X - c (world mm), as float4 rows.
struct SampleGeometry {
  int stride = 1, px = 1, py = 1, npoints = 0;
  int fnx = 0, fny = 0, fnz = 0, mnx = 0, mny = 0, mnz = 0;
  std::array<cl_float4, 3> to_moving{}, to_d{};
};

struct LinearRegistration::State {
  Device* device = nullptr;
  LinearRegistrationOptions options;
  ImageHeader fixed_grid, moving_grid;
  std::shared_ptr<const DeviceVolume> fixed, moving;  // non-finite voxels set to 0
  DeviceBuffer<float> fixed_level, moving_smoothed;
  DeviceBuffer<cl_float4> movgrad;
  // The sample points' mask: the user's mask and the fixed image's finite voxels (owned), or the fixed volume's own
  // finite-voxel mask (shared), or none.
  std::optional<DeviceBuffer<uint8_t>> mask_owned;
  const DeviceBuffer<uint8_t>* mask = nullptr;
  DeviceBuffer<float> partial, sums;
  std::vector<float> host_sums;
  ClKernel sums_kernel, reduce_kernel, gradient_kernel;
  // Mutual information: the binning, the histogram and gradient kernels, their partial rows and reductions.
  MiBinning binning;
  ClKernel mi_histogram_kernel, mi_gradient_kernel, mi_reduce_histogram, mi_reduce_gradient;
  DeviceBuffer<float> mi_partial, mi_histogram, mi_gradient, mi_log_ratio;
  std::vector<float> host_histogram, host_gradient;
  std::vector<int> strides;
  int prepared = -1;
  size_t groups = 1, group_size = 1;
  // Local correlation: the lattice kernels, its buffers (sized for the largest lattice) and this level's smoothers.
  ClKernel lncc_lattice_kernel, lncc_terms_kernel, lncc_partials_kernel, lncc_reduce;
  DeviceBuffer<float> lncc_moments, lncc_means, lncc_terms, lncc_smoothed_terms, lncc_grad, lncc_cc, lncc_valid,
      lncc_partial, lncc_sums;
  std::optional<GaussianSmoother> lncc_window, lncc_terms_window;
  float lncc_eps_fixed = 0.0f, lncc_eps_moving = 0.0f;

  SampleGeometry geometry(int level, const Eigen::Matrix4d& transform, const Eigen::Vector3d& fixed_centre) const {
    SampleGeometry g;
    g.stride = strides.at(static_cast<size_t>(level));
    const auto& fd = fixed_grid.dims;
    const auto& md = moving_grid.dims;
    g.px = static_cast<int>((fd[0] + g.stride - 1) / g.stride);
    g.py = static_cast<int>((fd[1] + g.stride - 1) / g.stride);
    g.npoints = g.px * g.py * static_cast<int>((fd[2] + g.stride - 1) / g.stride);
    g.fnx = static_cast<int>(fd[0]);
    g.fny = static_cast<int>(fd[1]);
    g.fnz = static_cast<int>(fd[2]);
    g.mnx = static_cast<int>(md[0]);
    g.mny = static_cast<int>(md[1]);
    g.mnz = static_cast<int>(md[2]);
    const Eigen::Matrix<double, 3, 4> to_moving =
        (moving_grid.affine.inverse() * transform * fixed_grid.affine).topRows<3>();
    Eigen::Matrix<double, 3, 4> to_d = fixed_grid.affine.topRows<3>();
    to_d.col(3) -= fixed_centre;
    for (int r = 0; r < 3; ++r) {
      g.to_moving[static_cast<size_t>(r)] = row(to_moving, r);
      g.to_d[static_cast<size_t>(r)] = row(to_d, r);
    }
    return g;
  }
};

LinearRegistration::LinearRegistration(Device& device, const Image& fixed, const Image& moving,
                                       LinearRegistrationOptions options,
                                       std::optional<std::span<const uint8_t>> fixed_mask)
    : LinearRegistration(device, checked_upload(device, fixed, "fixed"), checked_upload(device, moving, "moving"),
                         std::move(options), fixed_mask) {}

LinearRegistration::LinearRegistration(Device& device, std::shared_ptr<const DeviceVolume> fixed,
                                       std::shared_ptr<const DeviceVolume> moving, LinearRegistrationOptions options,
                                       std::optional<std::span<const uint8_t>> fixed_mask)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.device = &device;
  s.options = std::move(options);
  check_dof(s.options.dof);
  if (s.options.levels.empty()) throw std::invalid_argument("registration: no levels");
  if (s.options.max_iterations < 1) throw std::invalid_argument("registration: max_iterations must be >= 1");
  s.fixed = std::move(fixed);
  s.moving = std::move(moving);
  check_grid(s.fixed->grid, "fixed");
  check_grid(s.moving->grid, "moving");
  s.fixed_grid = s.fixed->grid;
  s.moving_grid = s.moving->grid;
  const auto nf = s.fixed->data.size(), nm = s.moving->data.size();
  if (fixed_mask && fixed_mask->size() != nf) {
    throw std::invalid_argument("registration: the fixed mask is not on the fixed grid");
  }
  cl_command_queue q = device.queue();
  if (fixed_mask) {
    std::vector<uint8_t> mask(fixed_mask->begin(), fixed_mask->end());
    if (std::none_of(mask.begin(), mask.end(), [](uint8_t b) { return b != 0; })) {
      throw std::invalid_argument("registration: the fixed mask is empty");
    }
    if (s.fixed->finite) {  // rare: a mask and non-finite voxels; combined on the host
      const std::vector<uint8_t> finite = s.fixed->finite->read_all(q);
      for (size_t i = 0; i < nf; ++i) mask[i] = mask[i] != 0 && finite[i] != 0 ? 1 : 0;
    }
    s.mask_owned.emplace(device, nf, CL_MEM_READ_ONLY);
    s.mask_owned->write(q, mask);
    s.mask = &*s.mask_owned;
  } else if (s.fixed->finite) {
    s.mask = &*s.fixed->finite;
  }
  // The MI binning spans the moving image and the fixed image inside the mask.
  const auto [flo, fhi] = fixed_mask ? s.fixed->range_inside(device, *s.mask) : std::pair{s.fixed->lo, s.fixed->hi};
  check_values(*s.fixed, flo, fhi, "fixed");
  check_values(*s.moving, s.moving->lo, s.moving->hi, "moving");
  s.binning = rtf::mi_binning(flo, fhi, s.moving->lo, s.moving->hi);
  const double smallest = *std::min_element(s.fixed_grid.voxel_mm.begin(), s.fixed_grid.voxel_mm.end());
  for (const LinearLevel& level : s.options.levels) {
    if (!(level.spacing_mm > 0.0) || !(level.fwhm_mm >= 0.0)) {
      throw std::invalid_argument("registration: level spacing must be > 0 and FWHM >= 0");
    }
    s.strides.push_back(std::max(1, static_cast<int>(std::lround(level.spacing_mm / smallest))));
  }
  s.fixed_level = DeviceBuffer<float>(device, nf);
  s.moving_smoothed = DeviceBuffer<float>(device, nm);
  s.movgrad = DeviceBuffer<cl_float4>(device, nm);
  const bool cpu = device.info().is_cpu();
  std::vector<std::string> defines;
  if (s.mask) defines.emplace_back("HAS_MASK");
  if (cpu) defines.emplace_back("ITEM_PARTIALS");
  s.sums_kernel = device.kernel(kSource, "linear_sums", defines);
  s.reduce_kernel = device.kernel("rigid_register.cl", "reduce_partials", {fmt::format("NTERMS={}", kLinearSumTerms)});
  s.gradient_kernel = device.kernel("rigid_register.cl", "reference_gradient");
  size_t most_points = 0;
  for (int stride : s.strides) {
    size_t points = 1;
    for (int64_t d : s.fixed_grid.dims) points *= static_cast<size_t>((d + stride - 1) / stride);
    most_points = std::max(most_points, points);
  }
  if (cpu) {
    s.group_size = 1;
    s.groups =
        std::clamp<size_t>(most_points, 1, kCpuItemsPerComputeUnit * std::max<size_t>(device.info().compute_units, 1));
  } else {
    s.group_size = kGpuGroupSize;
    s.groups = std::clamp<size_t>((most_points + kGpuGroupSize - 1) / kGpuGroupSize, 1, kGpuMaxGroups);
  }
  s.partial = DeviceBuffer<float>(device, s.groups * static_cast<size_t>(kLinearSumTerms));
  if (s.options.cost == LinearCost::kMi) {
    s.mi_histogram_kernel = device.kernel("mutual_information.cl", "mi_histogram", defines);
    s.mi_gradient_kernel = device.kernel("mutual_information.cl", "mi_gradient", defines);
    s.mi_reduce_histogram =
        device.kernel("rigid_register.cl", "reduce_partials", {fmt::format("NTERMS={}", kMiHistogramTerms)});
    s.mi_reduce_gradient =
        device.kernel("rigid_register.cl", "reduce_partials", {fmt::format("NTERMS={}", kMiGradientTerms)});
    s.mi_partial = DeviceBuffer<float>(device, s.groups * static_cast<size_t>(kMiHistogramTerms));
    s.mi_histogram = DeviceBuffer<float>(device, static_cast<size_t>(kMiHistogramTerms));
    s.mi_gradient = DeviceBuffer<float>(device, static_cast<size_t>(kMiGradientTerms));
    s.mi_log_ratio = DeviceBuffer<float>(device, static_cast<size_t>(kMiBins * kMiBins));
    s.host_histogram.resize(static_cast<size_t>(kMiHistogramTerms));
    s.host_gradient.resize(static_cast<size_t>(kMiGradientTerms));
  }
  if (s.options.cost == LinearCost::kLncc) {
    if (!(s.options.lncc_window_voxels > 0.0)) throw std::invalid_argument("registration: the LNCC window must be > 0");
    s.lncc_lattice_kernel = device.kernel("linear_lncc.cl", "lncc_lattice");
    s.lncc_terms_kernel = device.kernel("linear_lncc.cl", "lncc_terms",
                                        s.mask ? std::vector<std::string>{"HAS_MASK"} : std::vector<std::string>{});
    s.lncc_partials_kernel =
        device.kernel("linear_lncc.cl", "lncc_gradient_partials",
                      cpu ? std::vector<std::string>{"ITEM_PARTIALS"} : std::vector<std::string>{});
    s.lncc_reduce = device.kernel("rigid_register.cl", "reduce_partials", {fmt::format("NTERMS={}", kLnccTerms)});
    s.lncc_moments = DeviceBuffer<float>(device, 6 * most_points);
    s.lncc_means = DeviceBuffer<float>(device, 6 * most_points);
    s.lncc_terms = DeviceBuffer<float>(device, 4 * most_points);
    s.lncc_smoothed_terms = DeviceBuffer<float>(device, 4 * most_points);
    s.lncc_grad = DeviceBuffer<float>(device, 3 * most_points);
    s.lncc_cc = DeviceBuffer<float>(device, most_points);
    s.lncc_valid = DeviceBuffer<float>(device, most_points);
    s.lncc_partial = DeviceBuffer<float>(device, s.groups * static_cast<size_t>(kLnccTerms));
    s.lncc_sums = DeviceBuffer<float>(device, static_cast<size_t>(kLnccTerms));
    const double fmax = std::max(std::abs(s.fixed->lo), std::abs(s.fixed->hi));
    const double mmax = std::max(std::abs(s.moving->lo), std::abs(s.moving->hi));
    s.lncc_eps_fixed = static_cast<float>(kLnccRelativeEps * fmax * fmax);
    s.lncc_eps_moving = static_cast<float>(kLnccRelativeEps * mmax * mmax);
  }
  s.sums = DeviceBuffer<float>(device, static_cast<size_t>(kLinearSumTerms));
  s.host_sums.resize(static_cast<size_t>(kLinearSumTerms));
  const Eigen::Vector4d mid(0.5 * static_cast<double>(s.fixed_grid.dims[0] - 1),
                            0.5 * static_cast<double>(s.fixed_grid.dims[1] - 1),
                            0.5 * static_cast<double>(s.fixed_grid.dims[2] - 1), 1.0);
  fixed_centre_ = (s.fixed_grid.affine * mid).head<3>();
}

LinearRegistration::~LinearRegistration() = default;

int LinearRegistration::stride(int level) const {
  return state_->strides.at(static_cast<size_t>(level));
}

void LinearRegistration::prepare_level(int level) {
  State& s = *state_;
  if (s.prepared == level) return;
  const LinearLevel& spec = s.options.levels.at(static_cast<size_t>(level));
  Device& device = *s.device;
  cl_command_queue q = device.queue();
  const DeviceBuffer<float>* moving = &s.moving->data;
  if (spec.fwhm_mm > 0.0) {
    SmoothingSpec smoothing;
    smoothing.fwhm_mm = spec.fwhm_mm;
    GaussianSmoother fixed_smoother(device, s.fixed_grid.dims, s.fixed_grid.voxel_mm, smoothing);
    fixed_smoother.enqueue(s.fixed->data, s.fixed_level, 1);
    GaussianSmoother moving_smoother(device, s.moving_grid.dims, s.moving_grid.voxel_mm, smoothing);
    moving_smoother.enqueue(s.moving->data, s.moving_smoothed, 1);
    moving = &s.moving_smoothed;
    RTF_CL_CHECK(clFinish(q));
  } else {
    RTF_CL_CHECK(clEnqueueCopyBuffer(q, s.fixed->data.get(), s.fixed_level.get(), 0, 0, s.fixed->data.bytes(), 0,
                                     nullptr, nullptr));
  }
  const Eigen::Matrix3d g = s.moving_grid.affine.topLeftCorner<3, 3>().inverse().transpose();
  Eigen::Matrix<double, 3, 4> g34 = Eigen::Matrix<double, 3, 4>::Zero();
  g34.leftCols<3>() = g;
  const auto& d = s.moving_grid.dims;
  set_args(s.gradient_kernel, *moving, s.movgrad, static_cast<int>(d[0]), static_cast<int>(d[1]),
           static_cast<int>(d[2]), row(g34, 0), row(g34, 1), row(g34, 2));
  launch<1>(q, s.gradient_kernel, {s.movgrad.size()}, {64}, {}, EventMode::kNone);
  if (s.options.cost == LinearCost::kLncc) {
    const SampleGeometry lattice_geometry = s.geometry(level, Eigen::Matrix4d::Identity(), fixed_centre_);
    const std::array<int64_t, 3> lattice{lattice_geometry.px, lattice_geometry.py,
                                         lattice_geometry.npoints / (lattice_geometry.px * lattice_geometry.py)};
    SmoothingSpec window;
    window.fwhm_mm = s.options.lncc_window_voxels;  // on the lattice's unit steps
    s.lncc_window.emplace(device, lattice, std::array<double, 3>{1.0, 1.0, 1.0}, window, std::nullopt, 6);
    s.lncc_terms_window.emplace(device, lattice, std::array<double, 3>{1.0, 1.0, 1.0}, window, std::nullopt, 4);
  }
  RTF_CL_CHECK(clFinish(q));
  s.prepared = level;
}

LinearSums LinearRegistration::sums(int level, const Eigen::Matrix4d& transform, double scale, double offset) {
  prepare_level(level);
  State& s = *state_;
  const SampleGeometry g = s.geometry(level, transform, fixed_centre_);
  const LocalMemory scratch{s.group_size * sizeof(float)};
  const auto fs = static_cast<float>(scale), fo = static_cast<float>(offset);
  if (s.mask) {
    set_args(s.sums_kernel, s.fixed_level, *s.mask, s.movgrad, g.fnx, g.fny, g.fnz, g.mnx, g.mny, g.mnz, g.stride, g.px,
             g.py, g.npoints, g.to_moving[0], g.to_moving[1], g.to_moving[2], g.to_d[0], g.to_d[1], g.to_d[2], fs, fo,
             s.partial, scratch);
  } else {
    set_args(s.sums_kernel, s.fixed_level, s.movgrad, g.fnx, g.fny, g.fnz, g.mnx, g.mny, g.mnz, g.stride, g.px, g.py,
             g.npoints, g.to_moving[0], g.to_moving[1], g.to_moving[2], g.to_d[0], g.to_d[1], g.to_d[2], fs, fo,
             s.partial, scratch);
  }
  cl_command_queue q = s.device->queue();
  launch<1>(q, s.sums_kernel, {s.groups * s.group_size}, {s.group_size}, {}, EventMode::kNone);
  set_args(s.reduce_kernel, s.partial, static_cast<int>(s.groups), s.sums);
  launch<1>(q, s.reduce_kernel, {s.host_sums.size()}, {s.host_sums.size()}, {}, EventMode::kNone);
  s.sums.read(q, s.host_sums);
  const std::vector<double> terms(s.host_sums.begin(), s.host_sums.end());
  return LinearSums::unpack(terms);
}

const MiBinning& LinearRegistration::mi_binning() const {
  return state_->binning;
}

MiEvaluation LinearRegistration::mutual_information(int level, const Eigen::Matrix4d& transform, bool gradient,
                                                    std::vector<double>* histogram) {
  State& s = *state_;
  if (s.options.cost != LinearCost::kMi) throw std::logic_error("registration: not set up for the MI cost");
  prepare_level(level);
  const SampleGeometry g = s.geometry(level, transform, fixed_centre_);
  const auto fmin = static_cast<float>(s.binning.fixed_min), finv = static_cast<float>(s.binning.fixed_inv),
             mmin = static_cast<float>(s.binning.moving_min), minv = static_cast<float>(s.binning.moving_inv);
  cl_command_queue q = s.device->queue();
  const bool cpu = s.group_size == 1;
  const LocalMemory hist_scratch{(cpu ? 1 : kMiHistogramTerms) * sizeof(float)};
  if (s.mask) {
    set_args(s.mi_histogram_kernel, s.fixed_level, *s.mask, s.movgrad, g.fnx, g.fny, g.mnx, g.mny, g.mnz, g.stride,
             g.px, g.py, g.npoints, g.to_moving[0], g.to_moving[1], g.to_moving[2], fmin, finv, mmin, minv,
             s.mi_partial, hist_scratch);
  } else {
    set_args(s.mi_histogram_kernel, s.fixed_level, s.movgrad, g.fnx, g.fny, g.mnx, g.mny, g.mnz, g.stride, g.px, g.py,
             g.npoints, g.to_moving[0], g.to_moving[1], g.to_moving[2], fmin, finv, mmin, minv, s.mi_partial,
             hist_scratch);
  }
  launch<1>(q, s.mi_histogram_kernel, {s.groups * s.group_size}, {s.group_size}, {}, EventMode::kNone);
  set_args(s.mi_reduce_histogram, s.mi_partial, static_cast<int>(s.groups), s.mi_histogram);
  launch<1>(q, s.mi_reduce_histogram, {static_cast<size_t>(kMiHistogramTerms)}, {64}, {}, EventMode::kNone);
  s.mi_histogram.read(q, s.host_histogram);
  const std::vector<double> joint(s.host_histogram.begin(), s.host_histogram.end() - 1);
  MiEvaluation result;
  result.count = std::llround(s.host_histogram.back());
  std::vector<double> log_ratio;
  result.mi = rtf::mutual_information(joint, kMiBins, gradient ? &log_ratio : nullptr);
  if (histogram) *histogram = joint;
  if (!gradient || result.count == 0) return result;
  const std::vector<float> table(log_ratio.begin(), log_ratio.end());
  s.mi_log_ratio.write(q, table);
  const LocalMemory scratch{s.group_size * sizeof(float)};
  if (s.mask) {
    set_args(s.mi_gradient_kernel, s.fixed_level, *s.mask, s.movgrad, g.fnx, g.fny, g.mnx, g.mny, g.mnz, g.stride, g.px,
             g.py, g.npoints, g.to_moving[0], g.to_moving[1], g.to_moving[2], g.to_d[0], g.to_d[1], g.to_d[2], fmin,
             finv, mmin, minv, s.mi_log_ratio, s.mi_partial, scratch);
  } else {
    set_args(s.mi_gradient_kernel, s.fixed_level, s.movgrad, g.fnx, g.fny, g.mnx, g.mny, g.mnz, g.stride, g.px, g.py,
             g.npoints, g.to_moving[0], g.to_moving[1], g.to_moving[2], g.to_d[0], g.to_d[1], g.to_d[2], fmin, finv,
             mmin, minv, s.mi_log_ratio, s.mi_partial, scratch);
  }
  launch<1>(q, s.mi_gradient_kernel, {s.groups * s.group_size}, {s.group_size}, {}, EventMode::kNone);
  set_args(s.mi_reduce_gradient, s.mi_partial, static_cast<int>(s.groups), s.mi_gradient);
  launch<1>(q, s.mi_reduce_gradient, {static_cast<size_t>(kMiGradientTerms)}, {static_cast<size_t>(kMiGradientTerms)},
            {}, EventMode::kNone);
  s.mi_gradient.read(q, s.host_gradient);
  const double scale = s.binning.moving_inv / static_cast<double>(result.count);
  for (int i = 0; i < 12; ++i) result.gradient[i] = scale * s.host_gradient[static_cast<size_t>(i)];
  return result;
}

std::array<std::vector<double>, 3> LinearRegistration::lncc_window_taps() const {
  if (!state_->lncc_window) throw std::logic_error("registration: no LNCC level prepared");
  return state_->lncc_window->taps();
}

std::pair<double, double> LinearRegistration::lncc_eps() const {
  return {state_->lncc_eps_fixed, state_->lncc_eps_moving};
}

MiEvaluation LinearRegistration::local_correlation(int level, const Eigen::Matrix4d& transform) {
  State& s = *state_;
  if (s.options.cost != LinearCost::kLncc) throw std::logic_error("registration: not set up for the LNCC cost");
  prepare_level(level);
  const SampleGeometry g = s.geometry(level, transform, fixed_centre_);
  cl_command_queue q = s.device->queue();
  const auto points = static_cast<size_t>(g.npoints);
  set_args(s.lncc_lattice_kernel, s.fixed_level, s.movgrad, g.fnx, g.fny, g.mnx, g.mny, g.mnz, g.stride, g.px, g.py,
           g.npoints, g.to_moving[0], g.to_moving[1], g.to_moving[2], s.lncc_moments, s.lncc_grad);
  launch<1>(q, s.lncc_lattice_kernel, {points}, {64}, {}, EventMode::kNone);
  s.lncc_window->enqueue(s.lncc_moments, s.lncc_means, 6);
  if (s.mask) {
    set_args(s.lncc_terms_kernel, s.lncc_moments, s.lncc_means, *s.mask, g.fnx, g.fny, g.stride, g.px, g.py, g.npoints,
             s.lncc_eps_fixed, s.lncc_eps_moving, s.lncc_terms, s.lncc_cc, s.lncc_valid);
  } else {
    set_args(s.lncc_terms_kernel, s.lncc_moments, s.lncc_means, g.npoints, s.lncc_eps_fixed, s.lncc_eps_moving,
             s.lncc_terms, s.lncc_cc, s.lncc_valid);
  }
  launch<1>(q, s.lncc_terms_kernel, {points}, {64}, {}, EventMode::kNone);
  s.lncc_terms_window->enqueue(s.lncc_terms, s.lncc_smoothed_terms, 4);
  const LocalMemory scratch{s.group_size * sizeof(float)};
  set_args(s.lncc_partials_kernel, s.lncc_moments, s.lncc_smoothed_terms, s.lncc_grad, s.lncc_cc, s.lncc_valid,
           g.stride, g.px, g.py, g.npoints, g.to_d[0], g.to_d[1], g.to_d[2], s.lncc_partial, scratch);
  launch<1>(q, s.lncc_partials_kernel, {s.groups * s.group_size}, {s.group_size}, {}, EventMode::kNone);
  set_args(s.lncc_reduce, s.lncc_partial, static_cast<int>(s.groups), s.lncc_sums);
  launch<1>(q, s.lncc_reduce, {static_cast<size_t>(kLnccTerms)}, {static_cast<size_t>(kLnccTerms)}, {},
            EventMode::kNone);
  std::vector<float> sums(static_cast<size_t>(kLnccTerms));
  s.lncc_sums.read(q, sums);
  MiEvaluation result;
  result.count = std::llround(sums[13]);
  if (result.count == 0) return result;
  const auto count = static_cast<double>(result.count);
  result.mi = sums[12] / count;
  for (int i = 0; i < 12; ++i) result.gradient[i] = sums[static_cast<size_t>(i)] / count;
  return result;
}

LinearRegistrationResult LinearRegistration::run(const Eigen::Matrix4d& initial, const LinearProgress& progress) {
  inverse_affine(initial, "registration: the initial transform");
  if (state_->options.cost == LinearCost::kLncc) {
    // The quasi-Newton driver of MI maximises any smooth similarity with a gradient; its `mi` fields carry the LNCC.
    const MiProvider provider = [this](int level, const Eigen::Matrix4d& t, bool) {
      return local_correlation(level, t);
    };
    LinearRegistrationResult r = linear_register_mi(provider, state_->options, initial, fixed_centre_, state_->strides,
                                                    [&](const LinearLevelReport& report, int level) {
                                                      if (!progress) return;
                                                      LinearLevelReport copy = report;
                                                      copy.lncc = copy.mi;
                                                      copy.mi = 0.0;
                                                      progress(copy, level);
                                                    });
    r.lncc = r.mi;
    r.initial_lncc = r.initial_mi;
    r.mi = r.initial_mi = 0.0;
    for (LinearLevelReport& l : r.levels) {
      l.lncc = l.mi;
      l.mi = 0.0;
    }
    return r;
  }
  if (state_->options.cost == LinearCost::kMi) {
    const MiProvider provider = [this](int level, const Eigen::Matrix4d& t, bool gradient) {
      return mutual_information(level, t, gradient);
    };
    return linear_register_mi(provider, state_->options, initial, fixed_centre_, state_->strides, progress);
  }
  const LinearSumsProvider provider = [this](int level, const Eigen::Matrix4d& t, double scale, double offset) {
    return sums(level, t, scale, offset);
  };
  return linear_register(provider, state_->options, initial, fixed_centre_, state_->strides, progress);
}

}  // namespace rtf
