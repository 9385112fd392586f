// CumulativeGlm and SlidingGlm: design rows per volume, AR(1) whitening of the rows, host X'X, device sums and solve.
#include "core/glm/live_glm.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "core/temporal/detrend_basis.hpp"

namespace rtf {

namespace {

int constant_column(const DesignMatrix& design) {
  for (size_t j = 0; j < design.columns.size(); ++j) {
    if (design.columns[j].kind == DesignColumn::Kind::kConstant) return static_cast<int>(j);
  }
  return -1;
}

DeviceGlmSpec device_spec(int64_t voxels, const LiveGlmSpec& spec, int columns,
                          const std::vector<GlmContrast>& contrasts, int constant, int64_t per_call, bool compensated) {
  DeviceGlmSpec d;
  d.compensated = compensated;
  d.voxels = voxels;
  d.columns = columns;
  d.contrasts = contrasts;
  d.constant_column = constant;
  d.max_volumes_per_call = per_call;
  d.mask = spec.mask;
  return d;
}

void check_rho(double rho) {
  if (!(std::abs(rho) < 1.0)) throw std::invalid_argument(fmt::format("GLM: AR(1) coefficient {} not in (-1, 1)", rho));
}

std::vector<Eigen::Index> task_and_confound_columns(const DesignMatrix& design) {
  std::vector<Eigen::Index> kept;
  for (size_t j = 0; j < design.columns.size(); ++j) {
    const auto kind = design.columns[j].kind;
    if (kind == DesignColumn::Kind::kRegressor || kind == DesignColumn::Kind::kConfound) {
      kept.push_back(static_cast<Eigen::Index>(j));
    }
  }
  return kept;
}

}  // namespace

void set_design_confounds(DesignMatrix& design, int64_t index, std::span<const double> values) {
  if (index < 0 || index >= design.x.rows()) {
    throw std::out_of_range(
        fmt::format("GLM confounds: volume {} outside the design's {} rows", index, design.x.rows()));
  }
  size_t k = 0;
  for (size_t j = 0; j < design.columns.size(); ++j) {
    if (design.columns[j].kind != DesignColumn::Kind::kConfound) continue;
    if (k >= values.size()) break;
    design.x(index, static_cast<Eigen::Index>(j)) = values[k++];
  }
  size_t confounds = 0;
  for (const auto& c : design.columns) confounds += c.kind == DesignColumn::Kind::kConfound ? 1 : 0;
  if (values.size() != confounds) {
    throw std::invalid_argument(
        fmt::format("GLM confounds: {} values for a design with {} confound columns", values.size(), confounds));
  }
}

void CumulativeGlm::set_confounds(int64_t index, std::span<const double> values) {
  set_design_confounds(spec_.design, index, values);
}

void SlidingGlm::set_confounds(int64_t index, std::span<const double> values) {
  set_design_confounds(spec_.design, index, values);
}

CumulativeGlm::CumulativeGlm(Device& device, int64_t voxels, LiveGlmSpec spec)
    : spec_(std::move(spec)),
      glm_(device, device_spec(voxels, spec_, static_cast<int>(spec_.design.x.cols()), spec_.contrasts,
                               constant_column(spec_.design), 1, true)),
      xtx_(Eigen::MatrixXd::Zero(spec_.design.x.cols(), spec_.design.x.cols())) {
  check_rho(spec_.ar1);
  if (spec_.design.x.rows() < 1) throw std::invalid_argument("cumulative GLM: empty design");
  if (spec_.progressive_highpass_cutoff_s > 0.0 && !(spec_.tr_s > 0.0)) {
    throw std::invalid_argument("cumulative GLM: a progressive high-pass needs the TR");
  }
  active_.assign(static_cast<size_t>(spec_.design.x.cols()), true);
}

ClEvent CumulativeGlm::update(const DeviceRingBuffer& ring, int64_t index) {
  if (index <= last_index_) {
    throw std::invalid_argument(fmt::format("cumulative GLM: volume {} after volume {}", index, last_index_));
  }
  if (index >= spec_.design.x.rows()) {
    throw std::out_of_range(
        fmt::format("cumulative GLM: volume {} beyond the design's {} volumes", index, spec_.design.x.rows()));
  }
  if (!ring.contains(index)) throw std::out_of_range(fmt::format("cumulative GLM: volume {} not in the ring", index));
  const double rho = spec_.ar1;
  const bool continues = last_index_ >= 0 && last_index_ == index - 1 && ring.contains(index - 1);
  Eigen::RowVectorXd row = spec_.design.x.row(index);
  if (rho != 0.0) row = continues ? (row - rho * spec_.design.x.row(index - 1)).eval() : std::sqrt(1 - rho * rho) * row;
  const int64_t slot = ring.slot_of(index);
  const int64_t prev = continues ? ring.slot_of(index - 1) : -1;
  if (count_ == 0) glm_.reset(ring.data(), slot);
  glm_.accumulate(ring.data(), std::span<const int64_t>(&slot, 1), std::span<const int64_t>(&prev, 1), row, rho);
  xtx_ += row.transpose() * row;
  ++count_;
  last_index_ = index;
  if (spec_.progressive_highpass_cutoff_s > 0.0) {
    const auto allowed = static_cast<int64_t>(
        std::floor(2.0 * static_cast<double>(index + 1) * spec_.tr_s / spec_.progressive_highpass_cutoff_s));
    int64_t drift = 0;
    for (size_t j = 0; j < active_.size(); ++j) {
      if (spec_.design.columns[j].kind == DesignColumn::Kind::kDrift) active_[j] = ++drift <= allowed;
    }
  }
  model_ = make_glm_model_from_xtx(xtx_, count_, spec_.contrasts, &active_);
  return glm_.solve(model_);
}

std::vector<GlmContrast> window_contrasts(const DesignMatrix& design, const std::vector<GlmContrast>& contrasts,
                                          const std::vector<Eigen::Index>& kept_columns, int drift_order) {
  const auto columns = static_cast<Eigen::Index>(kept_columns.size()) + drift_order + 1;
  std::vector<GlmContrast> out;
  for (const GlmContrast& c : contrasts) {
    if (c.weights.cols() != design.x.cols()) {
      throw std::invalid_argument(
          fmt::format("contrast {}: {} weights for a design of {} columns", c.name, c.weights.cols(), design.x.cols()));
    }
    Eigen::MatrixXd w = Eigen::MatrixXd::Zero(c.weights.rows(), columns);
    Eigen::MatrixXd rest = c.weights;
    for (size_t k = 0; k < kept_columns.size(); ++k) {
      w.col(static_cast<Eigen::Index>(k)) = c.weights.col(kept_columns[k]);
      rest.col(kept_columns[k]).setZero();
    }
    if (rest.cwiseAbs().maxCoeff() > 0.0) {
      throw std::invalid_argument(
          fmt::format("contrast {} weighs a drift or constant column, which the sliding-window GLM replaces", c.name));
    }
    out.push_back({c.name, w});
  }
  return out;
}

SlidingGlm::SlidingGlm(Device& device, int64_t voxels, LiveGlmSpec spec, int64_t window, int drift_order)
    : spec_(std::move(spec)),
      window_(window),
      drift_order_(drift_order),
      kept_columns_(task_and_confound_columns(spec_.design)),
      glm_(device, device_spec(voxels, spec_, static_cast<int>(kept_columns_.size()) + drift_order + 1,
                               window_contrasts(spec_.design, spec_.contrasts, kept_columns_, drift_order),
                               static_cast<int>(kept_columns_.size()), window, true)) {
  check_rho(spec_.ar1);
  if (window < 2) throw std::invalid_argument("sliding GLM: the window needs at least 2 volumes");
  if (drift_order < 0 || drift_order > kMaxDetrendPolyOrder) {
    throw std::invalid_argument(
        fmt::format("sliding GLM: drift order {} not in 0..{}", drift_order, kMaxDetrendPolyOrder));
  }
  for (Eigen::Index j : kept_columns_) names_.push_back(spec_.design.columns[static_cast<size_t>(j)].name);
  for (int k = 0; k <= drift_order; ++k) names_.push_back(fmt::format("window_poly_{}", k));
  slots_.reserve(static_cast<size_t>(window));
  prev_.reserve(static_cast<size_t>(window));
}

ClEvent SlidingGlm::update(const DeviceRingBuffer& ring, int64_t newest) {
  if (ring.capacity() < window_) {
    throw std::invalid_argument(
        fmt::format("sliding GLM: a window of {} volumes needs a ring of at least that many (it holds {})", window_,
                    ring.capacity()));
  }
  if (newest >= spec_.design.x.rows()) {
    throw std::out_of_range(
        fmt::format("sliding GLM: volume {} beyond the design's {} volumes", newest, spec_.design.x.rows()));
  }
  const int64_t first = std::max<int64_t>(0, newest - window_ + 1);
  const int64_t span = newest - first + 1;
  const Eigen::MatrixXd poly = legendre_basis(span, drift_order_);
  const auto kept = static_cast<Eigen::Index>(kept_columns_.size());
  const double rho = spec_.ar1;
  slots_.clear();
  prev_.clear();
  std::vector<Eigen::RowVectorXd> rows;
  Eigen::RowVectorXd previous_row;
  int64_t previous_index = -2;
  for (int64_t i = first; i <= newest; ++i) {
    if (!ring.contains(i)) continue;
    Eigen::RowVectorXd row(kept + drift_order_ + 1);
    for (Eigen::Index k = 0; k < kept; ++k) row[k] = spec_.design.x(i, kept_columns_[static_cast<size_t>(k)]);
    row.tail(drift_order_ + 1) = poly.row(i - first);
    const bool continues = previous_index == i - 1;
    Eigen::RowVectorXd whitened = row;
    if (rho != 0.0) whitened = continues ? (row - rho * previous_row).eval() : std::sqrt(1 - rho * rho) * row;
    slots_.push_back(ring.slot_of(i));
    prev_.push_back(continues ? ring.slot_of(i - 1) : -1);
    rows.push_back(whitened);
    previous_row = row;
    previous_index = i;
  }
  if (rows.empty())
    throw std::out_of_range(fmt::format("sliding GLM: the ring holds no volume of {}..{}", first, newest));
  Eigen::MatrixXd x(static_cast<Eigen::Index>(rows.size()), kept + drift_order_ + 1);
  for (size_t k = 0; k < rows.size(); ++k) x.row(static_cast<Eigen::Index>(k)) = rows[k];
  glm_.reset(ring.data(), slots_.front());
  glm_.accumulate(ring.data(), slots_, prev_, x, rho);
  model_ = make_glm_model(x, glm_.spec().contrasts);
  return glm_.solve(model_);
}

}  // namespace rtf
