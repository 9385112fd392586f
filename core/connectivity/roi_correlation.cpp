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
  if (!options_.sliding && !options_.cumulative) {
    throw std::invalid_argument("roi correlation: neither the sliding nor the cumulative estimate is enabled");
  }
  if (options_.sliding && (options_.window < 2 || options_.window > slots)) {
    throw std::invalid_argument(fmt::format(
        "roi correlation: a sliding window of {} volumes needs 2 <= W <= {} (the volumes the data buffer holds)",
        options_.window, slots));
  }
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

void RoiCorrelation::update(const DeviceBuffer<float>& data, std::span<const int64_t> slots_in_time_order,
                            int64_t newest_slot, const ClEvent* after) {
  const auto window =
      checked_window("roi correlation", slots_in_time_order, newest_slot, slots_, options_.window, seen_);
  if (static_cast<int64_t>(data.size()) < slots_ * means_.voxels()) {
    throw std::invalid_argument(
        fmt::format("roi correlation: the data buffer has {} floats, {} slots of {} voxels need {}", data.size(),
                    slots_, means_.voxels(), slots_ * means_.voxels()));
  }
  enqueue_wait(device_.queue(), after);
  const int64_t r = means_.rois();
  read_ms_ = 0.0;
  slot_valid_[static_cast<size_t>(newest_slot)] = 0;
  for (int64_t slot : options_.sliding ? window : window.last(1)) {
    if (slot_valid_[static_cast<size_t>(slot)]) continue;
    means_.enqueue(data, slot);
    const auto t_read = std::chrono::steady_clock::now();
    means_.read(slot, std::span<double>(host_means_.data() + slot * r, static_cast<size_t>(r)));
    read_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_read).count();
    slot_valid_[static_cast<size_t>(slot)] = 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::span<const double> newest(host_means_.data() + newest_slot * r, static_cast<size_t>(r));
  std::copy(newest.begin(), newest.end(), newest_.begin());
  if (options_.sliding) compute_sliding(window);
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
  // Exact two-pass centring in double, then the lower triangle of the centred cross-product matrix.
  for (Eigen::Index i = 0; i < p; ++i) {
    auto col = centred_.col(i).head(used);
    if (used > 0) col.array() -= col.mean();
  }
  for (Eigen::Index i = 0; i < p; ++i) {
    for (Eigen::Index j = 0; j <= i; ++j) cov_(i, j) = centred_.col(i).head(used).dot(centred_.col(j).head(used));
  }
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

void RoiCorrelation::write_matrices(const Eigen::MatrixXd& c, bool defined, Eigen::MatrixXd& r,
                                    Eigen::MatrixXd& z) const {
  const auto p = static_cast<Eigen::Index>(present_.size());
  for (Eigen::Index i = 0; i < p; ++i) {
    const Eigen::Index ri = present_[static_cast<size_t>(i)];
    for (Eigen::Index j = 0; j <= i; ++j) {
      const Eigen::Index rj = present_[static_cast<size_t>(j)];
      double value = kNaN;
      if (defined && c(i, i) > 0.0 && c(j, j) > 0.0) {
        value = i == j ? 1.0 : std::clamp(c(i, j) / std::sqrt(c(i, i) * c(j, j)), -1.0, 1.0);
      }
      r(ri, rj) = r(rj, ri) = value;
      z(ri, rj) = z(rj, ri) = fisher_z(value);
    }
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
