// RoiCorrelation: ROI means on the device, R x R sliding and cumulative correlation matrices on the host (double).
#include "core/connectivity/roi_correlation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/connectivity/fisher_z.hpp"
#include "core/device/launch.hpp"

namespace rtf {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kDiagonalZ = fisher_z(1.0);

int64_t checked_rois(const RoiSet& rois) {
  if (rois.size() < 1) throw std::invalid_argument("roi correlation: no regions");
  if (rois.roi_of_voxel.size() != static_cast<size_t>(rois.dims[0] * rois.dims[1] * rois.dims[2])) {
    throw std::invalid_argument("roi correlation: the ROI set's voxel map does not match its grid");
  }
  return rois.size();
}

}  // namespace

RoiCorrelation::RoiCorrelation(Device& device, const RoiSet& rois, int64_t slots, ConnectivityOptions options)
    : device_(device),
      rois_(rois),
      slots_(slots),
      options_(options),
      means_(device, rois.roi_of_voxel, checked_rois(rois), slots) {
  check_connectivity_options("roi correlation", options_, slots);
  const int64_t r = rois.size();
  for (int64_t i = 0; i < r; ++i) {
    if (means_.voxel_counts()[static_cast<size_t>(i)] > 0) present_.push_back(static_cast<int32_t>(i));
  }
  const auto p = static_cast<Eigen::Index>(present_.size());
  const Eigen::Index w = options_.sliding ? options_.window : 1;
  slot_valid_.assign(static_cast<size_t>(slots), 0);
  seen_.assign(static_cast<size_t>(slots), 0);
  host_means_.assign(static_cast<size_t>(slots * r), kNaN);
  newest_.assign(static_cast<size_t>(r), kNaN);
  window_means_.setConstant(w, r, kNaN);
  centred_.setZero(w, p);
  cov_.setZero(p, p);
  for (auto* m : {&sliding_r_, &sliding_z_, &cumulative_r_, &cumulative_z_}) m->setConstant(r, r, kNaN);
  reference_.setZero(p);
  sum_.setZero(p);
  deviation_.setZero(p);
  cross_.setZero(p, p);
  inv_sd_.setZero(p);
  tri_r_.setZero(p * (p - 1) / 2 + 1);
  tri_z_.setZero(p * (p - 1) / 2 + 1);
  staging_.resize(static_cast<size_t>(w * r));
  window_.reserve(static_cast<size_t>(w));
  fetched_.reserve(static_cast<size_t>(w));
}

void RoiCorrelation::set_profile(KernelProfile* profile) {
  profile_ = profile;
  means_.set_profile(profile, "roi means");
}

void RoiCorrelation::reset_cumulative() {
  cumulative_n_ = 0;
  skipped_ = 0;
  sum_.setZero();
  cross_.setZero();
  cumulative_r_.setConstant(kNaN);
  cumulative_z_.setConstant(kNaN);
}

RoiCorrelation::~RoiCorrelation() {
  if (pending_ && !fetched_.empty()) {
    cl_event e = read_done_.get();
    if (clWaitForEvents(1, &e) != CL_SUCCESS) clFinish(device_.queue());  // never throw from here
  }
}

void RoiCorrelation::update(const DeviceBuffer<float>& data, std::span<const int64_t> slots_in_time_order,
                            int64_t newest_slot, const ClEvent* after) {
  enqueue(data, slots_in_time_order, newest_slot, after);
  finish();
}

void RoiCorrelation::enqueue(const DeviceBuffer<float>& data, std::span<const int64_t> slots_in_time_order,
                             int64_t newest_slot, const ClEvent* after) {
  if (pending_) throw std::logic_error("roi correlation: enqueue() twice without finish()");
  const auto window =
      checked_window("roi correlation", slots_in_time_order, newest_slot, slots_, options_.window, seen_);
  if (static_cast<int64_t>(data.size()) < slots_ * means_.voxels()) {
    throw std::invalid_argument(
        fmt::format("roi correlation: the data buffer has {} floats, {} slots of {} voxels need {}", data.size(),
                    slots_, means_.voxels(), slots_ * means_.voxels()));
  }
  enqueue_wait(device_.queue(), after);
  const auto r = static_cast<size_t>(means_.rois());
  window_.assign(window.begin(), window.end());
  fetched_.clear();
  slot_valid_[static_cast<size_t>(newest_slot)] = 0;
  for (int64_t slot : options_.sliding ? window : window.last(1)) {
    if (slot_valid_[static_cast<size_t>(slot)]) continue;
    means_.enqueue(data, slot);
    // Non-blocking read into this update's staging row; finish() waits for the last one (in-order queue).
    RTF_CL_CHECK(clEnqueueReadBuffer(device_.queue(), means_.means().get(), CL_FALSE,
                                     static_cast<size_t>(slot) * r * sizeof(cl_float2), r * sizeof(cl_float2),
                                     staging_.data() + fetched_.size() * r, 0, nullptr, read_done_.out()));
    fetched_.push_back(slot);
  }
  RTF_CL_CHECK(clFlush(device_.queue()));
  pending_newest_ = newest_slot;
  pending_ = true;
}

void RoiCorrelation::finish() {
  if (!pending_) throw std::logic_error("roi correlation: finish() without enqueue()");
  pending_ = false;
  const auto t_read = std::chrono::steady_clock::now();
  if (!fetched_.empty()) {
    cl_event e = read_done_.get();
    RTF_CL_CHECK(clWaitForEvents(1, &e));
  }
  const auto t0 = std::chrono::steady_clock::now();
  read_ms_ = std::chrono::duration<double, std::milli>(t0 - t_read).count();
  const int64_t r = means_.rois();
  for (size_t k = 0; k < fetched_.size(); ++k) {
    double* row = host_means_.data() + fetched_[k] * r;
    for (int64_t c = 0; c < r; ++c) {
      const cl_float2 m = staging_[k * static_cast<size_t>(r) + static_cast<size_t>(c)];
      row[c] = static_cast<double>(m.s[0]) + static_cast<double>(m.s[1]);
    }
    slot_valid_[static_cast<size_t>(fetched_[k])] = 1;
  }
  const std::span<const double> newest(host_means_.data() + pending_newest_ * r, static_cast<size_t>(r));
  std::copy(newest.begin(), newest.end(), newest_.begin());
  if (options_.sliding) compute_sliding(window_);
  if (options_.cumulative) add_cumulative(newest);
  host_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void RoiCorrelation::compute_sliding(std::span<const int64_t> window) {
  const int64_t r = means_.rois();
  const auto p = static_cast<Eigen::Index>(present_.size());
  window_rows_ = static_cast<int64_t>(window.size());
  Eigen::Index used = 0;
  for (size_t k = 0; k < window.size(); ++k) {
    const double* row = host_means_.data() + window[k] * r;
    bool finite = true;
    for (Eigen::Index c = 0; c < r; ++c) window_means_(static_cast<Eigen::Index>(k), c) = row[c];
    for (Eigen::Index i = 0; i < p; ++i) {
      const double v = row[present_[static_cast<size_t>(i)]];
      finite = finite && std::isfinite(v);
      centred_(used, i) = v;
    }
    if (finite) ++used;
  }
  sliding_used_ = used;
  // Exact two-pass centring in double, then the lower triangle of the centred cross-product matrix as one symmetric
  // rank-`used` update (Eigen's blocked, vectorised SYRK; its packing buffers, ~90 KB at P = 116, W = 100, live on the
  // stack below Eigen's 128 KB limit).
  if (used > 0) centred_.topRows(used).rowwise() -= centred_.topRows(used).colwise().mean();
  cov_.triangularView<Eigen::Lower>().setZero();
  cov_.selfadjointView<Eigen::Lower>().rankUpdate(centred_.topRows(used).transpose());
  write_matrices(cov_, used >= 2, sliding_r_, sliding_z_);
}

void RoiCorrelation::add_cumulative(std::span<const double> row) {
  const auto p = static_cast<Eigen::Index>(present_.size());
  for (Eigen::Index i = 0; i < p; ++i) {
    if (!std::isfinite(row[static_cast<size_t>(present_[static_cast<size_t>(i)])])) {
      ++skipped_;
      return;
    }
  }
  if (cumulative_n_ == 0) {
    for (Eigen::Index i = 0; i < p; ++i) reference_[i] = row[static_cast<size_t>(present_[static_cast<size_t>(i)])];
  }
  for (Eigen::Index i = 0; i < p; ++i) {
    deviation_[i] = row[static_cast<size_t>(present_[static_cast<size_t>(i)])] - reference_[i];
  }
  ++cumulative_n_;
  sum_ += deviation_;
  for (Eigen::Index j = 0; j < p; ++j) {
    cross_.col(j).tail(p - j) += deviation_[j] * deviation_.tail(p - j);  // lower triangle, column by column
  }
  const double n = static_cast<double>(cumulative_n_);
  for (Eigen::Index j = 0; j < p; ++j) {
    for (Eigen::Index i = j; i < p; ++i) cov_(i, j) = cross_(i, j) - sum_[i] * (sum_[j] / n);
  }
  write_matrices(cov_, cumulative_n_ >= 2, cumulative_r_, cumulative_z_);
}

void RoiCorrelation::write_matrices(const Eigen::MatrixXd& c, bool defined, Eigen::MatrixXd& r, Eigen::MatrixXd& z) {
  const auto p = static_cast<Eigen::Index>(present_.size());
  // 1 / sqrt(c_ii) once per region (NaN for a constant region, or fewer than 2 volumes: NaN spreads to its row).
  for (Eigen::Index i = 0; i < p; ++i) inv_sd_[i] = (defined && c(i, i) > 0.0) ? 1.0 / std::sqrt(c(i, i)) : kNaN;
  // r of the strict lower triangle, packed, clamped to [-1, 1]; then Fisher z of the packed values at once,
  // vectorised: atanh(r) = log((1 + r) / (1 - r)) / 2 with |r| clamped as in fisher_z(). Selects keep NaN (min/max
  // would not).
  Eigen::Index k = 0;
  for (Eigen::Index i = 0; i < p; ++i) {
    for (Eigen::Index j = 0; j < i; ++j) tri_r_[k++] = c(i, j) * inv_sd_[i] * inv_sd_[j];
  }
  auto packed_r = tri_r_.head(k);
  packed_r = (packed_r > 1.0).select(1.0, (packed_r < -1.0).select(-1.0, packed_r));
  const auto clamped =
      (packed_r > kMaxAbsCorrelation)
          .select(kMaxAbsCorrelation, (packed_r < -kMaxAbsCorrelation).select(-kMaxAbsCorrelation, packed_r));
  tri_z_.head(k) = 0.5 * ((1.0 + clamped) / (1.0 - clamped)).log();
  k = 0;
  for (Eigen::Index i = 0; i < p; ++i) {
    const Eigen::Index ri = present_[static_cast<size_t>(i)];
    for (Eigen::Index j = 0; j < i; ++j, ++k) {
      const Eigen::Index rj = present_[static_cast<size_t>(j)];
      r(ri, rj) = r(rj, ri) = tri_r_[k];
      z(ri, rj) = z(rj, ri) = tri_z_[k];
    }
    const bool varies = !std::isnan(inv_sd_[i]);
    r(ri, ri) = varies ? 1.0 : kNaN;
    z(ri, ri) = varies ? kDiagonalZ : kNaN;
  }
}

RoiCorrelationSeries roi_correlation_series(Device& device, const Image& bold, const RoiSet& rois,
                                            ConnectivityOptions options) {
  if (bold.header().dims != rois.dims) throw std::invalid_argument("roi correlation: the ROI set is on another grid");
  const auto nvox = static_cast<size_t>(bold.header().voxels_per_volume());
  const int64_t nt = bold.nt();
  RoiCorrelation corr(device, rois, nt, options);
  DeviceBuffer<float> series(device, nvox * static_cast<size_t>(nt), CL_MEM_READ_ONLY);
  series.write(device.queue(), bold.data());
  RoiCorrelationSeries out;
  out.means.resize(nt, rois.size());
  std::vector<int64_t> slots(static_cast<size_t>(nt));
  for (int64_t t = 0; t < nt; ++t) {
    slots[static_cast<size_t>(t)] = t;
    const int64_t held = std::min(t + 1, options.sliding ? options.window : int64_t{1});
    corr.update(series,
                std::span<const int64_t>(slots).subspan(static_cast<size_t>(t + 1 - held), static_cast<size_t>(held)),
                t);
    for (int64_t c = 0; c < rois.size(); ++c) out.means(t, c) = corr.newest_means()[static_cast<size_t>(c)];
  }
  out.sliding_r = corr.sliding_r();
  out.sliding_z = corr.sliding_z();
  out.cumulative_r = corr.cumulative_r();
  out.cumulative_z = corr.cumulative_z();
  return out;
}

}  // namespace rtf
