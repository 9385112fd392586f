// Stimulus functions on SPM's microtime grid, convolution with a basis set and sampling at scan times.
#include "core/design/stimulus.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace rtf {

void MicrotimeGrid::validate() const {
  if (!(tr_s > 0.0) || !std::isfinite(tr_s)) throw std::invalid_argument(fmt::format("design: TR = {} s", tr_s));
  if (n_scans < 1) throw std::invalid_argument(fmt::format("design: {} scans", n_scans));
  if (resolution < 1) throw std::invalid_argument(fmt::format("design: microtime resolution {} < 1", resolution));
  if (onset_bin < 1 || onset_bin > resolution) {
    throw std::invalid_argument(
        fmt::format("design: microtime onset {} outside 1..{} (the microtime resolution)", onset_bin, resolution));
  }
  if (n_scans > (int64_t{1} << 31) / resolution) {
    throw std::invalid_argument(fmt::format("design: {} scans x {} bins is too large", n_scans, resolution));
  }
}

Eigen::MatrixXd spm_stimulus_functions(const std::vector<double>& onsets_s, const std::vector<double>& durations_s,
                                       const Eigen::MatrixXd& inputs, const MicrotimeGrid& grid) {
  grid.validate();
  if (onsets_s.size() != durations_s.size() || static_cast<Eigen::Index>(onsets_s.size()) != inputs.rows()) {
    throw std::invalid_argument(fmt::format("design: {} onsets, {} durations, {} input rows", onsets_s.size(),
                                            durations_s.size(), inputs.rows()));
  }
  const double dt = grid.dt_s();
  const int64_t bins = grid.bins();
  const bool impulses = std::all_of(durations_s.begin(), durations_s.end(), [](double d) { return d == 0.0; });
  const double scale = impulses ? 1.0 / dt : 1.0;

  // Differences: +u at the first bin, -u one past the last; the cumulative sum gives the boxcars.
  Eigen::MatrixXd sf = Eigen::MatrixXd::Zero(bins, inputs.cols());
  const auto limit = static_cast<double>(bins);
  for (size_t e = 0; e < onsets_s.size(); ++e) {
    if (!(durations_s[e] >= 0.0) || !std::isfinite(durations_s[e]) || !std::isfinite(onsets_s[e])) {
      throw std::invalid_argument(
          fmt::format("design: event {} has onset {} s, duration {} s", e, onsets_s[e], durations_s[e]));
    }
    const double on = std::round(onsets_s[e] / dt) + 32.0;
    const double off = std::round(durations_s[e] / dt) + on + 1.0;
    const auto row = static_cast<Eigen::Index>(e);
    if (std::max(on, 0.0) < limit) sf.row(static_cast<Eigen::Index>(std::max(on, 0.0))) += scale * inputs.row(row);
    if (std::max(off, 0.0) < limit) sf.row(static_cast<Eigen::Index>(std::max(off, 0.0))) -= scale * inputs.row(row);
  }
  for (Eigen::Index b = 1; b < sf.rows(); ++b) sf.row(b) += sf.row(b - 1);
  return sf;
}

Eigen::MatrixXd convolve_and_sample(const Eigen::MatrixXd& stimulus, const Eigen::MatrixXd& basis,
                                    const MicrotimeGrid& grid) {
  grid.validate();
  if (stimulus.rows() != grid.bins()) {
    throw std::invalid_argument(fmt::format("design: {} stimulus bins for a grid of {}", stimulus.rows(), grid.bins()));
  }
  const Eigen::Index taps = basis.rows();
  Eigen::MatrixXd x(grid.n_scans, stimulus.cols() * basis.cols());
  for (Eigen::Index u = 0; u < stimulus.cols(); ++u) {
    for (Eigen::Index p = 0; p < basis.cols(); ++p) {
      const Eigen::Index column = u * basis.cols() + p;
      for (int64_t i = 0; i < grid.n_scans; ++i) {
        const Eigen::Index n = i * grid.resolution + grid.onset_bin + 31;
        const Eigen::Index count = std::min(taps, n + 1);  // x(n) = sum_j basis(j) stimulus(n - j)
        x(i, column) = basis.col(p).head(count).dot(stimulus.col(u).segment(n - count + 1, count).reverse());
      }
    }
  }
  return x;
}

}  // namespace rtf
