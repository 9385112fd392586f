// SlidingCca: filter bank construction, kernel specialisation, response cache, per-window temporal whitening.
#include "core/stats/cca.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

#include "core/device/launch.hpp"
#include "core/device/vector_width.hpp"
#include "core/filters/gaussian_taps.hpp"

namespace rtf {
namespace {

constexpr const char* kSource = "cca.cl";
constexpr int kMaxRadius = 24;           // filter half-width limit in voxels (FWHM far beyond the voxel size)
constexpr double kPivotEps = 1e-5;       // relative Cholesky pivot below which responses count as collinear
constexpr double kBasisPivotEps = 1e-8;  // the same for the temporal basis over a window (then it is refused)
constexpr size_t kSolveGroup = 64;
// Voxels per work-item of the solve: preferred_vector_width (core/device/vector_width.hpp). PoCL on AVX-512, planar
// 64x64x33, W 100: 348 ms per TR with 1, 77 with 4, 43 with 8, 35 with 16 (docs/algorithms/cca.md).
int default_vector_width(const Device& device) {
  return preferred_vector_width(device);
}

std::array<size_t, 3> filter_local(const std::array<int64_t, 3>& dims) {
  return {dims[0] >= 32 ? size_t{32} : size_t{16}, 4, 1};
}

std::array<size_t, 3> filter_global(const std::array<int64_t, 3>& dims) {
  return {static_cast<size_t>(dims[0]), static_cast<size_t>(dims[1]), static_cast<size_t>(dims[2])};
}

std::vector<float> to_float(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

}  // namespace

CcaTemporalBasis CcaTemporalBasis::sine_cosine(double period_s, double tr_s, int harmonics) {
  if (!(period_s > 0.0) || !std::isfinite(period_s)) {
    throw std::invalid_argument(fmt::format("CCA: stimulus period {} s must be positive", period_s));
  }
  if (!(tr_s > 0.0) || !std::isfinite(tr_s)) throw std::invalid_argument(fmt::format("CCA: TR {} s", tr_s));
  if (harmonics < 1 || 2 * harmonics > kMaxColumns) {
    throw std::invalid_argument(
        fmt::format("CCA: {} harmonics (1 or 2: at most {} basis columns)", harmonics, kMaxColumns));
  }
  CcaTemporalBasis b;
  b.columns_ = 2 * harmonics;
  b.period_s_ = period_s;
  b.tr_s_ = tr_s;
  return b;
}

CcaTemporalBasis CcaTemporalBasis::regressors(Eigen::MatrixXd columns) {
  if (columns.cols() < 1 || columns.cols() > kMaxColumns) {
    throw std::invalid_argument(
        fmt::format("CCA: {} temporal basis columns (1 to {} supported)", columns.cols(), kMaxColumns));
  }
  if (columns.rows() < 1) throw std::invalid_argument("CCA: the temporal basis has no rows");
  if (!columns.allFinite()) throw std::invalid_argument("CCA: the temporal basis has non-finite values");
  CcaTemporalBasis b;
  b.columns_ = static_cast<int>(columns.cols());
  b.is_table_ = true;
  b.table_ = std::move(columns);
  return b;
}

void CcaTemporalBasis::row(int64_t index, std::span<double> out) const {
  if (!has_row(index)) {
    throw std::out_of_range(
        fmt::format("CCA: no temporal basis row for volume {} (the regressors have {} rows)", index, table_.rows()));
  }
  if (is_table_) {
    for (int c = 0; c < columns_; ++c) out[static_cast<size_t>(c)] = table_(index, c);
    return;
  }
  const double t = static_cast<double>(index) * tr_s_;
  for (size_t k = 0; k < static_cast<size_t>(columns_ / 2); ++k) {
    const double phase = 2.0 * std::numbers::pi * static_cast<double>(k + 1) * t / period_s_;
    out[2 * k] = std::sin(phase);
    out[2 * k + 1] = std::cos(phase);
  }
}

CcaFilterBank make_cca_filter_bank(std::array<double, 3> voxel_mm, const CcaSpec& spec) {
  for (int a = 0; a < 3; ++a) {
    if (!(voxel_mm[a] > 0.0)) throw std::invalid_argument(fmt::format("CCA: voxel size {} is {}", a, voxel_mm[a]));
  }
  if (!(spec.fwhm_mm > 0.0) || !std::isfinite(spec.fwhm_mm)) {
    throw std::invalid_argument(fmt::format("CCA: filter FWHM {} mm must be positive", spec.fwhm_mm));
  }
  if (!(spec.truncate_sigmas >= 1.0) || !std::isfinite(spec.truncate_sigmas)) {
    throw std::invalid_argument(fmt::format("CCA: truncation at {} sigmas (at least 1)", spec.truncate_sigmas));
  }
  const bool volumetric = spec.filters == CcaFilters::kVolumetric;
  const double sigma = fwhm_to_sigma(spec.fwhm_mm);
  CcaFilterBank bank;
  std::array<std::array<double, 3>, 3> sums{};  // sums[axis][p] of the 1D taps
  for (int a = 0; a < 3; ++a) {
    const bool flat = !volumetric && a == 2;
    const double r = std::ceil(spec.truncate_sigmas * sigma / voxel_mm[a]);
    if (!flat && r > kMaxRadius) {
      throw std::invalid_argument(fmt::format("CCA: FWHM {} mm needs {} voxels of half-width along axis {} (max {})",
                                              spec.fwhm_mm, r, a, kMaxRadius));
    }
    const int radius = flat ? 0 : static_cast<int>(r);
    bank.radius[static_cast<size_t>(a)] = radius;
    for (int p = 0; p < 3; ++p) {
      auto& taps = bank.taps[static_cast<size_t>(a)][static_cast<size_t>(p)];
      taps.clear();
      for (int i = -radius; i <= radius; ++i) {
        const double u = flat ? 0.0 : i * voxel_mm[a] / sigma;
        taps.push_back(std::exp(-0.5 * u * u) * std::pow(u, p));
      }
      for (double w : taps) sums[static_cast<size_t>(a)][static_cast<size_t>(p)] += w;
    }
  }
  if (volumetric) {
    // The six axes through opposite vertices of an icosahedron: n n^T of the six spans the symmetric 3x3 matrices.
    const double phi = 0.5 * (1.0 + std::sqrt(5.0)), s = 1.0 / std::sqrt(1.0 + phi * phi);
    bank.directions = {{0, s, phi * s},  {0, s, -phi * s}, {s, phi * s, 0},
                       {s, -phi * s, 0}, {phi * s, 0, s},  {phi * s, 0, -s}};
  } else {
    const double h = 0.5 * std::sqrt(3.0);  // 0, 60 and 120 degrees in the x-y plane
    bank.directions = {{1, 0, 0}, {0.5, h, 0}, {-0.5, h, 0}};
  }
  // Sum over the filter support of each moment kernel (a product of 1D sums).
  auto moment_sum = [&](int px, int py, int pz) {
    return sums[0][static_cast<size_t>(px)] * sums[1][static_cast<size_t>(py)] * sums[2][static_cast<size_t>(pz)];
  };
  bank.coef.push_back({1.0 / moment_sum(0, 0, 0), 0, 0, 0, 0, 0, 0});
  for (const auto& n : bank.directions) {
    // f(r) = g(r) (n . r)^2 / sigma^2 = sum_ab n_a n_b g r_a r_b / sigma^2, normalised to unit sum.
    const double total = n[0] * n[0] * moment_sum(2, 0, 0) + n[1] * n[1] * moment_sum(0, 2, 0) +
                         n[2] * n[2] * moment_sum(0, 0, 2) + 2 * n[0] * n[1] * moment_sum(1, 1, 0) +
                         2 * n[0] * n[2] * moment_sum(1, 0, 1) + 2 * n[1] * n[2] * moment_sum(0, 1, 1);
    bank.coef.push_back({0.0, n[0] * n[0] / total, n[1] * n[1] / total, n[2] * n[2] / total, 2 * n[0] * n[1] / total,
                         2 * n[0] * n[2] / total, 2 * n[1] * n[2] / total});
  }
  return bank;
}

SlidingCca::SlidingCca(Device& device, const ImageHeader& grid, int64_t window, CcaTemporalBasis basis, CcaSpec spec)
    : device_(device),
      dims_(grid.dims),
      voxels_(grid.voxels_per_volume()),
      window_(window),
      basis_(std::move(basis)),
      spec_(spec),
      bank_(make_cca_filter_bank(grid.voxel_mm, spec)),
      filters_(static_cast<int>(bank_.coef.size())),
      columns_(basis_.columns()),
      vec_(spec.vector_width > 0 ? spec.vector_width : default_vector_width(device)),
      padded_((static_cast<size_t>(voxels_) + static_cast<size_t>(vec_) - 1) / static_cast<size_t>(vec_) *
              static_cast<size_t>(vec_)) {
  for (int a = 0; a < 3; ++a) {
    if (dims_[a] < 1) throw std::invalid_argument(fmt::format("CCA: dimension {} is {}", a, dims_[a]));
  }
  if (vec_ != 1 && vec_ != 2 && vec_ != 4 && vec_ != 8 && vec_ != 16) {
    throw std::invalid_argument(fmt::format("CCA: vector width {} (0, 1, 2, 4, 8 or 16)", spec.vector_width));
  }
  if (voxels_ * 7 >= (int64_t{1} << 31)) throw std::invalid_argument("CCA: volume too large (7 x voxels >= 2^31)");
  if (window_ < minimum_volumes()) {
    throw std::invalid_argument(fmt::format(
        "CCA: a window of {} volumes is too short: {} filters and {} basis columns need at least {} volumes", window_,
        filters_, columns_, minimum_volumes()));
  }
  const bool volumetric = spec_.filters == CcaFilters::kVolumetric;
  std::vector<std::string> defines = {fmt::format("NX={}", dims_[0]),
                                      fmt::format("NY={}", dims_[1]),
                                      fmt::format("NZ={}", dims_[2]),
                                      fmt::format("RX={}", bank_.radius[0]),
                                      fmt::format("RY={}", bank_.radius[1]),
                                      fmt::format("RZ={}", bank_.radius[2]),
                                      fmt::format("NFILT={}", filters_),
                                      fmt::format("NTEMP={}", columns_),
                                      fmt::format("VEC={}", vec_),
                                      fmt::format("PIVOT_EPS={:e}f", kPivotEps),
                                      "JACOBI_SWEEPS=6"};
  if (volumetric) defines.emplace_back("VOLUMETRIC");
  if (spec_.signed_map) defines.emplace_back("SIGNED");
  baseline_kernel_ = device.kernel(kSource, "cca_set_baseline", defines);
  moments_x_ = device.kernel(kSource, "cca_moments_x", defines);
  moments_y_ = device.kernel(kSource, "cca_moments_y", defines);
  if (volumetric) moments_z_ = device.kernel(kSource, "cca_moments_z", defines);
  solve_ = device.kernel(kSource, "cca_solve", defines);

  for (size_t a = 0; a < 3; ++a) {
    std::vector<float> t;
    for (const auto& p : bank_.taps[a]) t.insert(t.end(), p.begin(), p.end());
    taps_[a] = DeviceBuffer<float>(device, t.size(), CL_MEM_READ_ONLY);
    taps_[a].write(device.queue(), t);
  }
  std::vector<double> coef;
  for (const auto& c : bank_.coef) coef.insert(coef.end(), c.begin(), c.end());
  coef_ = DeviceBuffer<float>(device, coef.size(), CL_MEM_READ_ONLY);
  coef_.write(device.queue(), to_float(coef));

  const auto n = static_cast<size_t>(voxels_);
  baseline_ = DeviceBuffer<float>(device, n);
  xmom_ = DeviceBuffer<float>(device, 3 * n);
  if (volumetric) xymom_ = DeviceBuffer<float>(device, 6 * n);
  responses_ = DeviceBuffer<float>(device, static_cast<size_t>(window_) * static_cast<size_t>(filters_) * padded_);
  responses_.fill(device.queue(), 0.0f);  // the padding lanes stay 0 (a degenerate voxel) forever
  cached_index_.assign(static_cast<size_t>(window_), -1);
  const auto w = static_cast<size_t>(window_), t = static_cast<size_t>(columns_);
  for (size_t s = 0; s < 2; ++s) {
    window_slot_[s] = DeviceBuffer<cl_int>(device, w, CL_MEM_READ_ONLY);
    window_z_[s] = DeviceBuffer<float>(device, (w + 1) * t, CL_MEM_READ_ONLY);
    slot_stage_[s].assign(w, 0);
    z_stage_[s].assign((w + 1) * t, 0.0f);
  }
  x_.resize(window_, columns_);
  row_.resize(t);
  ring_slots_.resize(w);
  ring_indices_.resize(w);
}

void SlidingCca::reset() {
  std::fill(cached_index_.begin(), cached_index_.end(), -1);
  has_baseline_ = false;
}

void SlidingCca::validate(const DeviceBuffer<float>& volumes, std::span<const int64_t> slots,
                          std::span<const int64_t> volume_indices, const DeviceBuffer<float>& out_map) const {
  const size_t n = volume_indices.size();
  if (slots.size() != n) {
    throw std::invalid_argument(fmt::format("CCA: {} slots for {} volume indices", slots.size(), n));
  }
  if (static_cast<int64_t>(n) < minimum_volumes()) {
    throw std::invalid_argument(fmt::format("CCA: {} volumes given; {} filters and {} basis columns need at least {}",
                                            n, filters_, columns_, minimum_volumes()));
  }
  if (static_cast<int64_t>(n) > window_) {
    throw std::invalid_argument(fmt::format("CCA: {} volumes given, more than the window of {}", n, window_));
  }
  if (out_map.size() < static_cast<size_t>(voxels_)) {
    throw std::invalid_argument(fmt::format("CCA: output map of {} elements for {} voxels", out_map.size(), voxels_));
  }
  const auto held = static_cast<int64_t>(volumes.size() / static_cast<size_t>(voxels_));
  for (size_t j = 0; j < n; ++j) {
    if (slots[j] < 0 || slots[j] >= held) {
      throw std::invalid_argument(
          fmt::format("CCA: slot {} is outside the volumes buffer ({} volumes of {} voxels)", slots[j], held, voxels_));
    }
    if (volume_indices[j] < 0) throw std::invalid_argument(fmt::format("CCA: volume index {}", volume_indices[j]));
    if (!basis_.has_row(volume_indices[j])) {
      throw std::invalid_argument(fmt::format("CCA: no temporal basis row for volume {}", volume_indices[j]));
    }
    for (size_t k = 0; k < j; ++k) {
      if (volume_indices[k] == volume_indices[j]) {
        throw std::invalid_argument(fmt::format("CCA: volume {} given twice", volume_indices[j]));
      }
      if (slots[k] == slots[j]) {
        throw std::invalid_argument(
            fmt::format("CCA: slot {} given for volumes {} and {}", slots[j], volume_indices[k], volume_indices[j]));
      }
      if (volume_indices[k] % window_ == volume_indices[j] % window_) {
        throw std::invalid_argument(fmt::format("CCA: volumes {} and {} are a multiple of the window ({}) apart",
                                                volume_indices[k], volume_indices[j], window_));
      }
    }
  }
}

void SlidingCca::prepare_temporal(std::span<const int64_t> volume_indices, int stage) {
  const auto n = static_cast<int64_t>(volume_indices.size());
  const int t = columns_;
  for (int64_t j = 0; j < n; ++j) {
    basis_.row(volume_indices[static_cast<size_t>(j)], row_);
    for (int c = 0; c < t; ++c) x_(j, c) = row_[static_cast<size_t>(c)];
  }
  // Centre over the window; Cxx = Xc^T Xc = L L^T; z_j = L^-1 xc_j so that sum_j z_j z_j^T = I.
  using Small = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, CcaTemporalBasis::kMaxColumns,
                              CcaTemporalBasis::kMaxColumns>;
  Small cxx = Small::Zero(t, t);
  std::array<double, CcaTemporalBasis::kMaxColumns> squares{};
  for (int c = 0; c < t; ++c) {
    double mean = 0.0, square = 0.0;
    for (int64_t j = 0; j < n; ++j) mean += x_(j, c);
    mean /= static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) {
      square += x_(j, c) * x_(j, c);
      x_(j, c) -= mean;
    }
    for (int64_t j = 0; j < n; ++j) cxx(c, c) += x_(j, c) * x_(j, c);
    squares[static_cast<size_t>(c)] = square;
    if (!(cxx(c, c) > 1e-10 * square)) {
      throw std::invalid_argument(fmt::format("CCA: temporal basis column {} has no variance over volumes {}..{}", c,
                                              volume_indices.front(), volume_indices.back()));
    }
  }
  // A column that is rounding noise next to the others (e.g. sin(pi t) sampled at its zeros) would be whitened into
  // a spurious regressor: refuse it too.
  const double largest = *std::max_element(squares.begin(), squares.begin() + t);
  for (int c = 0; c < t; ++c) {
    if (!(squares[static_cast<size_t>(c)] > 1e-20 * largest)) {
      throw std::invalid_argument(fmt::format("CCA: temporal basis column {} has no variance over volumes {}..{}", c,
                                              volume_indices.front(), volume_indices.back()));
    }
  }
  for (int c = 0; c < t; ++c) {
    for (int d = 0; d < c; ++d) {
      double s = 0.0;
      for (int64_t j = 0; j < n; ++j) s += x_(j, c) * x_(j, d);
      cxx(c, d) = cxx(d, c) = s;
    }
  }
  Small l = Small::Zero(t, t);  // Cholesky, checking pivots relative to the diagonal (linear dependence)
  for (int i = 0; i < t; ++i) {
    for (int j = 0; j <= i; ++j) {
      double s = cxx(i, j);
      for (int k = 0; k < j; ++k) s -= l(i, k) * l(j, k);
      if (i == j) {
        if (!(s > kBasisPivotEps * cxx(i, i))) {
          throw std::invalid_argument(
              fmt::format("CCA: the temporal basis columns are linearly dependent over volumes {}..{}",
                          volume_indices.front(), volume_indices.back()));
        }
        l(i, i) = std::sqrt(s);
      } else {
        l(i, j) = s / l(j, j);
      }
    }
  }
  std::vector<float>& z = z_stage_[static_cast<size_t>(stage)];
  std::array<double, CcaTemporalBasis::kMaxColumns> zj{};
  for (int64_t j = 0; j < n; ++j) {
    for (int i = 0; i < t; ++i) {
      double s = x_(j, i);
      for (int k = 0; k < i; ++k) s -= l(i, k) * zj[static_cast<size_t>(k)];
      zj[static_cast<size_t>(i)] = s / l(i, i);
      z[static_cast<size_t>(j * t + i)] = static_cast<float>(zj[static_cast<size_t>(i)]);
    }
  }
  // Row 0 of L^-T = column 0 of L^-1: weight of the first (centred) basis column per unit of whitened weight.
  for (int i = 0; i < t; ++i) {
    double s = i == 0 ? 1.0 : 0.0;
    for (int k = 0; k < i; ++k) s -= l(i, k) * zj[static_cast<size_t>(k)];
    zj[static_cast<size_t>(i)] = s / l(i, i);
    z[static_cast<size_t>(n * t + i)] = static_cast<float>(zj[static_cast<size_t>(i)]);
  }
}

ClEvent SlidingCca::filter_volume(const DeviceBuffer<float>& volumes, int64_t slot, int64_t cache_slot,
                                  const std::vector<cl_event>& wait) {
  const cl_command_queue q = device_.queue();
  const auto offset = static_cast<cl_ulong>(slot) * static_cast<cl_ulong>(voxels_);
  const auto out_offset = static_cast<cl_ulong>(cache_slot) * static_cast<cl_ulong>(filters_) * padded_;
  const EventMode mode = profile_mode(profile_);
  ClEvent first;
  const bool set_baseline = !has_baseline_;
  if (set_baseline) {  // the in-order queue runs everything after it: only the first launch waits
    set_args(baseline_kernel_, volumes, offset, baseline_);
    first = launch<1>(q, baseline_kernel_, {static_cast<size_t>(voxels_)}, {kSolveGroup}, wait, mode);
    has_baseline_ = true;
  }
  set_args(moments_x_, volumes, offset, baseline_, xmom_, taps_[0]);
  ClEvent x_pass = launch<3>(q, moments_x_, filter_global(dims_), filter_local(dims_),
                             set_baseline ? std::vector<cl_event>{} : wait, mode);
  if (!set_baseline) first = std::move(x_pass);
  ClEvent last;
  if (spec_.filters == CcaFilters::kVolumetric) {
    const cl_ulong none = 0;
    set_args(moments_y_, xmom_, xymom_, none, taps_[1], coef_);
    launch<3>(q, moments_y_, filter_global(dims_), filter_local(dims_), {}, EventMode::kNone);
    set_args(moments_z_, xymom_, responses_, out_offset, taps_[2], coef_);
    last = launch<3>(q, moments_z_, filter_global(dims_), filter_local(dims_), {}, mode);
  } else {
    set_args(moments_y_, xmom_, responses_, out_offset, taps_[1], coef_);
    last = launch<3>(q, moments_y_, filter_global(dims_), filter_local(dims_), {}, mode);
  }
  if (profile_) profile_->add("cca filter", std::move(first), last);
  return last;
}

ClEvent SlidingCca::enqueue(const DeviceBuffer<float>& volumes, std::span<const int64_t> slots,
                            std::span<const int64_t> volume_indices, DeviceBuffer<float>& out_map,
                            const std::vector<cl_event>& wait) {
  validate(volumes, slots, volume_indices, out_map);
  const int stage = next_stage_;
  const auto s = static_cast<size_t>(stage);
  // The staging arrays of this stage were last read by the upload two calls ago: wait for it (long done in practice).
  if (stage_done_[s].get() != nullptr) {
    cl_event e = stage_done_[s].get();
    RTF_CL_CHECK(clWaitForEvents(1, &e));
  }
  prepare_temporal(volume_indices, stage);  // may throw (rank-deficient basis) before any device work
  next_stage_ ^= 1;

  const size_t n = volume_indices.size();
  bool wait_used = false;
  for (size_t j = 0; j < n; ++j) {
    const int64_t cache_slot = volume_indices[j] % window_;
    slot_stage_[s][j] = static_cast<cl_int>(cache_slot);
    if (cached_index_[static_cast<size_t>(cache_slot)] == volume_indices[j]) continue;
    filter_volume(volumes, slots[j], cache_slot, wait_used ? std::vector<cl_event>{} : wait);
    cached_index_[static_cast<size_t>(cache_slot)] = volume_indices[j];
    wait_used = true;
  }
  const cl_command_queue q = device_.queue();
  RTF_CL_CHECK(clEnqueueWriteBuffer(q, window_slot_[s].get(), CL_FALSE, 0, n * sizeof(cl_int), slot_stage_[s].data(), 0,
                                    nullptr, nullptr));
  const size_t z_count = (n + 1) * static_cast<size_t>(columns_);
  ClEvent uploaded;  // the n whitened rows, then row 0 of L^-T
  RTF_CL_CHECK(clEnqueueWriteBuffer(q, window_z_[s].get(), CL_FALSE, 0, z_count * sizeof(float), z_stage_[s].data(), 0,
                                    nullptr, uploaded.out()));
  stage_done_[s] = std::move(uploaded);

  const int count = static_cast<int>(n);
  set_args(solve_, responses_, window_slot_[s], window_z_[s], count, out_map);
  ClEvent done = launch<1>(q, solve_, {padded_ / static_cast<size_t>(vec_)}, {vec_ > 1 ? size_t{8} : kSolveGroup},
                           wait_used ? std::vector<cl_event>{} : wait);
  if (profile_) profile_->add("cca solve", done);
  return done;
}

ClEvent SlidingCca::enqueue(const DeviceRingBuffer& ring, DeviceBuffer<float>& out_map,
                            const std::vector<cl_event>& wait) {
  if (window_ > ring.capacity()) {
    throw std::invalid_argument(
        fmt::format("CCA: the window of {} volumes is longer than the ring's {}", window_, ring.capacity()));
  }
  if (ring.voxels() != voxels_) {
    throw std::invalid_argument(fmt::format("CCA: ring volumes of {} voxels, grid of {}", ring.voxels(), voxels_));
  }
  const int64_t newest = ring.newest();
  if (newest < 0) throw std::invalid_argument("CCA: the ring holds no volume yet");
  const int64_t n = std::min(window_, newest + 1);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t index = newest - n + 1 + j;
    ring_indices_[static_cast<size_t>(j)] = index;
    ring_slots_[static_cast<size_t>(j)] = ring.slot_of(index);
  }
  const auto count = static_cast<size_t>(n);
  return enqueue(ring.data(), std::span<const int64_t>(ring_slots_.data(), count),
                 std::span<const int64_t>(ring_indices_.data(), count), out_map, wait);
}

std::vector<float> SlidingCca::compute(const Image& series) {
  if (series.header().dims != dims_) throw std::invalid_argument("CCA: series grid differs from the CCA's grid");
  if (series.nt() > window_) {
    throw std::invalid_argument(
        fmt::format("CCA: a series of {} volumes in one window needs a window of at least {} (have {})", series.nt(),
                    series.nt(), window_));
  }
  reset();
  DeviceBuffer<float> volumes(device_, series.data().size());
  volumes.write(device_.queue(), series.data());
  std::vector<int64_t> indices(static_cast<size_t>(series.nt()));
  for (size_t t = 0; t < indices.size(); ++t) indices[t] = static_cast<int64_t>(t);
  DeviceBuffer<float> map(device_, static_cast<size_t>(voxels_));
  enqueue(volumes, indices, indices, map);
  std::vector<float> result = map.read_all(device_.queue());
  reset();
  return result;
}

Image SlidingCca::compute_sliding(const Image& series) {
  if (series.header().dims != dims_) throw std::invalid_argument("CCA: series grid differs from the CCA's grid");
  reset();
  DeviceBuffer<float> volumes(device_, series.data().size());
  volumes.write(device_.queue(), series.data());
  Image maps(series.header(), std::numeric_limits<float>::quiet_NaN());
  DeviceBuffer<float> map(device_, static_cast<size_t>(voxels_));
  std::vector<int64_t> indices;
  for (int64_t t = 0; t < series.nt(); ++t) {
    const int64_t n = std::min(window_, t + 1);
    if (n < minimum_volumes()) continue;
    indices.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) indices[static_cast<size_t>(j)] = t - n + 1 + j;
    enqueue(volumes, indices, indices, map);
    map.read(device_.queue(), maps.volume(t));
  }
  reset();
  return maps;
}

std::vector<float> SlidingCca::read_responses(int64_t volume_index) const {
  if (volume_index < 0 || cached_index_[static_cast<size_t>(volume_index % window_)] != volume_index) {
    throw std::invalid_argument(fmt::format("CCA: volume {} is not cached", volume_index));
  }
  const auto nvox = static_cast<size_t>(voxels_);
  std::vector<float> out(static_cast<size_t>(filters_) * nvox);
  const size_t first = static_cast<size_t>(volume_index % window_) * static_cast<size_t>(filters_) * padded_;
  for (size_t f = 0; f < static_cast<size_t>(filters_); ++f) {
    responses_.read(device_.queue(), std::span<float>(out).subspan(f * nvox, nvox), first + f * padded_);
  }
  return out;
}

}  // namespace rtf
