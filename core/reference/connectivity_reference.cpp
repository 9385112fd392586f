// Double-precision connectivity reference: plain loops.
#include "core/reference/connectivity_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/connectivity/fisher_z.hpp"

namespace rtf::reference {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

std::vector<double> roi_means(std::span<const float> volume, std::span<const int32_t> roi_of_voxel, int64_t rois) {
  if (volume.size() != roi_of_voxel.size()) throw std::invalid_argument("reference roi_means: sizes differ");
  std::vector<double> sum(static_cast<size_t>(rois), 0.0);
  std::vector<int64_t> count(static_cast<size_t>(rois), 0);
  for (size_t v = 0; v < volume.size(); ++v) {
    const int32_t r = roi_of_voxel[v];
    if (r < 0 || !std::isfinite(volume[v])) continue;
    sum[static_cast<size_t>(r)] += volume[v];
    ++count[static_cast<size_t>(r)];
  }
  std::vector<double> mean(static_cast<size_t>(rois));
  for (size_t r = 0; r < mean.size(); ++r) mean[r] = count[r] > 0 ? sum[r] / static_cast<double>(count[r]) : kNaN;
  return mean;
}

double pearson(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size()) throw std::invalid_argument("reference pearson: sizes differ");
  double mx = 0.0, my = 0.0;
  int64_t n = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) continue;
    mx += x[i];
    my += y[i];
    ++n;
  }
  if (n < 2) return kNaN;
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxx = 0.0, syy = 0.0, sxy = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) continue;
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (!(sxx > 0.0 && syy > 0.0)) return kNaN;
  return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

std::vector<double> seed_correlation_map(std::span<const float> series, int64_t voxels, int64_t first, int64_t count,
                                         std::span<const int32_t> seed_voxels) {
  if (first < 0 || count < 0 || static_cast<int64_t>(series.size()) < (first + count) * voxels) {
    throw std::invalid_argument("reference seed_correlation_map: volume range outside the series");
  }
  const auto volume = [&](int64_t t) {
    return series.subspan(static_cast<size_t>(t * voxels), static_cast<size_t>(voxels));
  };
  std::vector<double> seed(static_cast<size_t>(count));
  for (int64_t t = 0; t < count; ++t) {
    double sum = 0.0;
    int64_t n = 0;
    for (int32_t v : seed_voxels) {
      const float x = volume(first + t)[static_cast<size_t>(v)];
      if (!std::isfinite(x)) continue;
      sum += x;
      ++n;
    }
    seed[static_cast<size_t>(t)] = n > 0 ? sum / static_cast<double>(n) : kNaN;
  }
  std::vector<double> map(static_cast<size_t>(voxels));
  std::vector<double> x(static_cast<size_t>(count));
  for (int64_t v = 0; v < voxels; ++v) {
    for (int64_t t = 0; t < count; ++t) x[static_cast<size_t>(t)] = volume(first + t)[static_cast<size_t>(v)];
    map[static_cast<size_t>(v)] = pearson(x, seed);
  }
  return map;
}

Eigen::MatrixXd roi_correlation_matrix(const Eigen::MatrixXd& means, const std::vector<bool>& present) {
  const Eigen::Index r = means.cols();
  if (static_cast<Eigen::Index>(present.size()) != r) throw std::invalid_argument("reference: present size");
  std::vector<Eigen::Index> rows;
  for (Eigen::Index t = 0; t < means.rows(); ++t) {
    bool ok = true;
    for (Eigen::Index c = 0; c < r; ++c) ok = ok && (!present[static_cast<size_t>(c)] || std::isfinite(means(t, c)));
    if (ok) rows.push_back(t);
  }
  Eigen::MatrixXd out = Eigen::MatrixXd::Constant(r, r, kNaN);
  std::vector<double> a(rows.size()), b(rows.size());
  for (Eigen::Index i = 0; i < r; ++i) {
    for (Eigen::Index j = 0; j < r; ++j) {
      if (!present[static_cast<size_t>(i)] || !present[static_cast<size_t>(j)]) continue;
      for (size_t k = 0; k < rows.size(); ++k) {
        a[k] = means(rows[k], i);
        b[k] = means(rows[k], j);
      }
      const double value = pearson(a, b);
      out(i, j) = (i == j && !std::isnan(value)) ? 1.0 : value;
    }
  }
  return out;
}

Eigen::MatrixXd fisher_z(const Eigen::MatrixXd& r) {
  return r.unaryExpr([](double v) { return rtf::fisher_z(v); });
}

std::vector<double> fisher_z(std::span<const double> r) {
  std::vector<double> z(r.size());
  std::transform(r.begin(), r.end(), z.begin(), [](double v) { return rtf::fisher_z(v); });
  return z;
}

}  // namespace rtf::reference
