// ArGlm: the Cochrane-Orcutt launches (estimate, smooth the AR maps, ..., final fit), the per-map maxima, read-back
// of one fit, and the whole-series convenience used by `rtfmri glm --noise arP`.
#include "core/glm/ar_glm.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/device/launch.hpp"

namespace rtf {

namespace {

constexpr size_t kLocal = 64;
constexpr int kMaxWorkGroup = 256;
constexpr size_t kConstantBytes = 60 * 1024;  // under the 64 KiB every OpenCL device offers

}  // namespace

ArGlm::ArGlm(Device& device, std::array<int64_t, 3> dims, std::array<double, 3> voxel_mm, std::vector<uint8_t> mask,
             ArGlmModel model, ArGlmOptions options, int max_batch)
    : device_(device), dims_(dims), model_(std::move(model)), options_(options), max_batch_(max_batch) {
  volume_ = static_cast<size_t>(dims[0] * dims[1] * dims[2]);
  if (mask.size() != volume_) {
    throw std::invalid_argument(fmt::format("AR GLM: mask of {} voxels for a grid of {}", mask.size(), volume_));
  }
  if (options.iterations < 1) throw std::invalid_argument("AR GLM: at least one iteration");
  if (options.order != model_.order) throw std::invalid_argument("AR GLM: the options' order differs from the model's");
  if (max_batch < 1) throw std::invalid_argument("AR GLM: batch < 1");
  for (size_t v = 0; v < volume_; ++v) {
    if (mask[v]) voxel_index_.push_back(static_cast<int32_t>(v));
  }
  if (voxel_index_.empty()) throw std::invalid_argument("AR GLM: the mask is empty");
  const int ns = std::max<int>(1, static_cast<int>(model_.statistics.size()));
  const int qmax = model_.max_rows();
  const int r = model_.rank;
  const std::vector<std::string> defines{
      fmt::format("N={}", model_.n),      fmt::format("P={}", model_.order), fmt::format("R={}", r),
      fmt::format("NS={}", ns),           fmt::format("QMAX={}", qmax),      fmt::format("DOF={}", model_.dof),
      fmt::format("WG={}", kMaxWorkGroup)};
  const size_t real_bytes = device.has_fp64() ? 8 : 4;
  const size_t table_bytes = real_bytes * static_cast<size_t>(r) *
                             (static_cast<size_t>(model_.n) + static_cast<size_t>(ns) * static_cast<size_t>(qmax));
  std::vector<std::string> estimate = defines, final_fit = defines;
  if (table_bytes > kConstantBytes) {
    estimate.emplace_back("BSPACE=__global");
    final_fit.emplace_back("BSPACE=__global");
  }
  estimate.emplace_back("ESTIMATE=1");
  final_fit.emplace_back("ESTIMATE=0");
  estimate_ = device.kernel("ar_glm.cl", "ar_fit", estimate);
  final_ = device.kernel("ar_glm.cl", "ar_fit", final_fit);
  map_max_ = device.kernel("ar_glm.cl", "map_max", final_fit);

  const cl_command_queue q = device.queue();
  const size_t vm = voxel_index_.size();
  voxel_ = DeviceBuffer<int32_t>(device, vm, CL_MEM_READ_ONLY);
  voxel_.write(q, voxel_index_);
  // U and the statistics' rows in the kernel's `real`: converting float to double in the time loop would cost more
  // than the arithmetic (conversions run at a quarter of the FP64 rate on NVIDIA GPUs).
  std::vector<double> basis(static_cast<size_t>(model_.n) * static_cast<size_t>(r));
  for (int t = 0; t < model_.n; ++t) {
    for (int j = 0; j < r; ++j) basis[static_cast<size_t>(t * r + j)] = model_.basis(t, j);
  }
  std::vector<double> rows(static_cast<size_t>(ns * qmax * r), 0.0);
  std::vector<int32_t> shape(static_cast<size_t>(2 * ns), 0);
  for (size_t s = 0; s < model_.statistics.size(); ++s) {
    const ArStatistic& st = model_.statistics[s];
    shape[2 * s] = st.estimable ? static_cast<int32_t>(st.rows.rows()) : 0;
    shape[2 * s + 1] = st.is_f ? 1 : 0;
    for (Eigen::Index l = 0; l < st.rows.rows(); ++l) {
      for (int i = 0; i < r; ++i) {
        rows[(s * static_cast<size_t>(qmax) + static_cast<size_t>(l)) * static_cast<size_t>(r) +
             static_cast<size_t>(i)] = st.rows(l, i);
      }
    }
  }
  if (device.has_fp64()) {
    basis64_ = DeviceBuffer<double>(device, basis.size(), CL_MEM_READ_ONLY);
    basis64_.write(q, basis);
    rows64_ = DeviceBuffer<double>(device, rows.size(), CL_MEM_READ_ONLY);
    rows64_.write(q, rows);
    basis_mem_ = basis64_.get();
    rows_mem_ = rows64_.get();
  } else {
    const std::vector<float> basis32(basis.begin(), basis.end()), rows32(rows.begin(), rows.end());
    basis32_ = DeviceBuffer<float>(device, basis32.size(), CL_MEM_READ_ONLY);
    basis32_.write(q, basis32);
    rows32_ = DeviceBuffer<float>(device, rows32.size(), CL_MEM_READ_ONLY);
    rows32_.write(q, rows32);
    basis_mem_ = basis32_.get();
    rows_mem_ = rows32_.get();
  }
  shape_ = DeviceBuffer<int32_t>(device, shape.size(), CL_MEM_READ_ONLY);
  shape_.write(q, shape);
  const size_t rho_size = static_cast<size_t>(max_batch) * static_cast<size_t>(model_.order) * volume_;
  rho_a_ = DeviceBuffer<float>(device, rho_size);
  rho_b_ = DeviceBuffer<float>(device, rho_size);
  rho_a_.fill(q, 0.0f);
  rho_b_.fill(q, 0.0f);
  stat_ = DeviceBuffer<float>(device, static_cast<size_t>(ns) * static_cast<size_t>(max_batch) * vm);
  sigma2_ = DeviceBuffer<float>(device, vm);
  gamma_ = DeviceBuffer<float>(device, static_cast<size_t>(r) * vm);
  maxima_ = DeviceBuffer<float>(device, static_cast<size_t>(ns) * static_cast<size_t>(max_batch));
  if (options.ar_fwhm_mm > 0 && options.iterations > 1) {
    ar_smoother_ = std::make_unique<GaussianSmoother>(
        device, dims, voxel_mm, SmoothingSpec{.fwhm_mm = options.ar_fwhm_mm, .path = SmoothingPath::kSeparablePasses},
        std::span<const uint8_t>(mask), static_cast<int64_t>(max_batch) * model_.order);
  }
}

void ArGlm::fit(const DeviceBuffer<float>& series, int count, bool details) {
  if (count < 1 || count > max_batch_) {
    throw std::invalid_argument(fmt::format("AR GLM: {} data sets for a batch of {}", count, max_batch_));
  }
  if (details && count != 1) throw std::invalid_argument("AR GLM: details are kept for one data set only");
  if (series.size() < static_cast<size_t>(count) * static_cast<size_t>(model_.n) * volume_) {
    throw std::invalid_argument("AR GLM: the series buffer is smaller than the data sets");
  }
  const cl_command_queue q = device_.queue();
  const int vm = static_cast<int>(voxel_index_.size());
  const int vol = static_cast<int>(volume_);
  const std::array<size_t, 2> global{static_cast<size_t>(vm), static_cast<size_t>(count)}, local{kLocal, 1};
  const int sb = max_batch_;
  const DeviceBuffer<float>* current = &rho_a_;  // unread while `first`
  int first = 1;
  for (int i = 1; i < options_.iterations; ++i) {
    DeviceBuffer<float>* out = current == &rho_a_ ? &rho_b_ : &rho_a_;
    set_args(estimate_, series, voxel_, basis_mem_, rows_mem_, shape_, *current, first, vm, vol, sb, *out, stat_, 0,
             sigma2_, gamma_);
    launch<2>(q, estimate_, global, local, {}, EventMode::kNone);
    if (ar_smoother_) {
      DeviceBuffer<float>* smoothed = out == &rho_a_ ? &rho_b_ : &rho_a_;
      ar_smoother_->enqueue(*out, *smoothed, static_cast<int64_t>(count) * model_.order);
      current = smoothed;
    } else {
      current = out;
    }
    first = 0;
  }
  set_args(final_, series, voxel_, basis_mem_, rows_mem_, shape_, *current, first, vm, vol, sb,
           current == &rho_a_ ? rho_b_ : rho_a_, stat_, details ? 1 : 0, sigma2_, gamma_);
  launch<2>(q, final_, global, local, {}, EventMode::kNone);
  last_rho_ = current;
  last_first_ = first != 0;
}

std::vector<float> ArGlm::maxima(int count) {
  const int ns = std::max<int>(1, static_cast<int>(model_.statistics.size()));
  const int vm = static_cast<int>(voxel_index_.size());
  set_args(map_max_, stat_, vm, count, max_batch_, maxima_);
  launch<1>(device_.queue(), map_max_, {static_cast<size_t>(ns * count * kMaxWorkGroup)},
            {static_cast<size_t>(kMaxWorkGroup)}, {}, EventMode::kNone);
  std::vector<float> out(static_cast<size_t>(ns * count));
  maxima_.read(device_.queue(), out);
  return out;
}

ArGlm::Fit ArGlm::read_fit() {
  const cl_command_queue q = device_.queue();
  const size_t vm = voxel_index_.size();
  Fit fit;
  fit.sigma2 = sigma2_.read_all(q);
  const std::vector<float> gamma = gamma_.read_all(q);
  Eigen::MatrixXd g(model_.rank, static_cast<Eigen::Index>(vm));
  for (int i = 0; i < model_.rank; ++i) {
    for (size_t m = 0; m < vm; ++m) g(i, static_cast<Eigen::Index>(m)) = gamma[static_cast<size_t>(i) * vm + m];
  }
  fit.beta = model_.to_beta * g;
  const std::vector<float> stat = stat_.read_all(q);
  for (size_t s = 0; s < model_.statistics.size(); ++s) {
    const auto begin = stat.begin() + static_cast<std::ptrdiff_t>(s * static_cast<size_t>(max_batch_) * vm);
    fit.statistics.emplace_back(begin, begin + static_cast<std::ptrdiff_t>(vm));
  }
  std::vector<float> rho(static_cast<size_t>(model_.order) * volume_, 0.0f);
  if (!last_first_ && last_rho_ != nullptr) last_rho_->read(q, rho);
  for (int k = 0; k < model_.order; ++k) {
    const auto begin = rho.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(k) * volume_);
    fit.rho.emplace_back(begin, begin + static_cast<std::ptrdiff_t>(volume_));
  }
  return fit;
}

ArGlmImages fit_ar_glm_series(Device& device, const Image& bold, const Eigen::MatrixXd& design,
                              const std::vector<GlmContrast>& contrasts, const std::vector<uint8_t>& mask,
                              const ArGlmOptions& options, double fwhm_mm) {
  if (design.rows() != bold.nt()) {
    throw std::invalid_argument(
        fmt::format("AR GLM: {} design rows for a series of {} volumes", design.rows(), bold.nt()));
  }
  ArGlmImages out;
  out.model = make_ar_glm_model(design, contrasts, options.order);
  const ImageHeader& h = bold.header();
  const size_t volume = static_cast<size_t>(h.voxels_per_volume());
  const cl_command_queue q = device.queue();
  DeviceBuffer<float> series(device, bold.data().size());
  series.write(q, bold.data());
  if (fwhm_mm > 0) {
    GaussianSmoother smoother(device, h.dims, h.voxel_mm,
                              SmoothingSpec{.fwhm_mm = fwhm_mm, .path = SmoothingPath::kSeparablePasses},
                              std::span<const uint8_t>(mask), bold.nt());
    DeviceBuffer<float> smoothed(device, bold.data().size());
    smoother.enqueue(series, smoothed, bold.nt());
    series = std::move(smoothed);
  }
  ArGlm glm(device, h.dims, h.voxel_mm, mask, out.model, options, 1);
  glm.fit(series, 1, true);
  const ArGlm::Fit fit = glm.read_fit();
  const auto& index = glm.mask_voxels_index();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ImageHeader h1 = h;
  h1.num_volumes = 1;
  ImageHeader hb = h;
  hb.num_volumes = out.model.columns;
  out.beta = Image(hb, nan);
  out.sigma2 = Image(h1, nan);
  for (size_t m = 0; m < index.size(); ++m) {
    const auto v = static_cast<size_t>(index[m]);
    out.sigma2.data()[v] = fit.sigma2[m];
    for (int j = 0; j < out.model.columns; ++j) {
      out.beta.data()[static_cast<size_t>(j) * volume + v] =
          static_cast<float>(fit.beta(j, static_cast<Eigen::Index>(m)));
    }
  }
  for (const std::vector<float>& s : fit.statistics) {
    Image map(h1, nan);
    for (size_t m = 0; m < index.size(); ++m) map.data()[static_cast<size_t>(index[m])] = s[m];
    out.statistics.push_back(std::move(map));
  }
  ImageHeader hr = h;
  hr.num_volumes = options.order;
  out.rho = Image(hr, 0.0f);
  for (int k = 0; k < options.order; ++k) {
    std::copy(fit.rho[static_cast<size_t>(k)].begin(), fit.rho[static_cast<size_t>(k)].end(),
              out.rho.data().begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(k) * volume));
  }
  return out;
}

}  // namespace rtf
