// Two-pass moments and per-slice means (qa_reference.hpp).
#include "core/reference/qa_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace rtf::reference {

VoxelMoments voxel_moments(const std::vector<std::vector<float>>& volumes, size_t first, size_t last) {
  if (first >= last || last > volumes.size()) throw std::invalid_argument("voxel_moments reference: bad range");
  const size_t voxels = volumes[first].size();
  const auto n = static_cast<double>(last - first);
  VoxelMoments out;
  out.mean.assign(voxels, 0.0);
  out.sd.assign(voxels, 0.0);
  out.tsnr.assign(voxels, 0.0);
  for (size_t v = 0; v < voxels; ++v) {
    double sum = 0.0;
    for (size_t t = first; t < last; ++t) sum += volumes[t][v];
    const double mean = sum / n;
    double squares = 0.0;
    for (size_t t = first; t < last; ++t) squares += (volumes[t][v] - mean) * (volumes[t][v] - mean);
    out.mean[v] = mean;
    out.sd[v] = std::sqrt(squares / n);
    out.tsnr[v] = out.sd[v] > 0.0 ? mean / out.sd[v] : 0.0;
  }
  return out;
}

SliceMeans slice_means(const std::vector<float>& volume, std::array<int64_t, 3> dims,
                       const std::vector<uint8_t>& mask) {
  const auto [nx, ny, nz] = dims;
  if (volume.size() != static_cast<size_t>(nx * ny * nz) || mask.size() != volume.size()) {
    throw std::invalid_argument("slice_means reference: sizes");
  }
  SliceMeans out;
  double total = 0.0;
  int64_t total_count = 0;
  for (int64_t z = 0; z < nz; ++z) {
    double sum = 0.0;
    int64_t count = 0;
    for (int64_t i = z * nx * ny; i < (z + 1) * nx * ny; ++i) {
      const auto k = static_cast<size_t>(i);
      if (mask[k] != 0 && std::isfinite(volume[k])) {
        sum += volume[k];
        ++count;
      }
    }
    out.slice.push_back(count > 0 ? sum / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN());
    total += sum;
    total_count += count;
  }
  out.global = total_count > 0 ? total / static_cast<double>(total_count) : std::numeric_limits<double>::quiet_NaN();
  return out;
}

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// 1-based ranks, tied values given the mean of their ranks.
std::vector<double> average_ranks(const std::vector<double>& x) {
  std::vector<size_t> order(x.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> ranks(x.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && x[order[j]] == x[order[i]]) ++j;
    for (size_t k = i; k < j; ++k) ranks[order[k]] = 0.5 * static_cast<double>(i + 1 + j);
    i = j;
  }
  return ranks;
}

}  // namespace

double quality_index(const std::vector<float>& volume, const std::vector<float>& reference,
                     const std::vector<uint8_t>& mask) {
  constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> a, b;
  for (size_t v = 0; v < mask.size(); ++v) {
    if (mask[v] == 0) continue;
    if (!std::isfinite(volume[v]) || !std::isfinite(reference[v])) return kUndefined;
    a.push_back(volume[v]);
    b.push_back(reference[v]);
  }
  if (a.size() < 2) return kUndefined;
  const std::vector<double> ra = average_ranks(a), rb = average_ranks(b);
  const double mean = 0.5 * static_cast<double>(a.size() + 1);
  double ab = 0.0, aa = 0.0, bb = 0.0;
  for (size_t i = 0; i < ra.size(); ++i) {
    ab += (ra[i] - mean) * (rb[i] - mean);
    aa += (ra[i] - mean) * (ra[i] - mean);
    bb += (rb[i] - mean) * (rb[i] - mean);
  }
  if (bb == 0.0) return kUndefined;
  if (aa == 0.0) return 1.0;  // a constant volume: correlation 0 (AFNI's 3dTqual)
  return 1.0 - ab / std::sqrt(aa * bb);
}

std::vector<int64_t> doubled_centred_ranks(const std::vector<float>& values) {
  const std::vector<double> r = average_ranks(std::vector<double>(values.begin(), values.end()));
  std::vector<int64_t> out(r.size());
  for (size_t i = 0; i < r.size(); ++i) out[i] = std::llround(2.0 * r[i]) - static_cast<int64_t>(r.size() + 1);
  return out;
}

RankSums rank_sums(const std::vector<float>& volume, const std::vector<float>& reference,
                   const std::vector<uint8_t>& mask) {
  std::vector<float> a, b;
  for (size_t v = 0; v < mask.size(); ++v) {
    if (mask[v] == 0) continue;
    a.push_back(volume[v]);
    b.push_back(reference[v]);
  }
  const std::vector<int64_t> ra = doubled_centred_ranks(a), rb = doubled_centred_ranks(b);
  RankSums s;
  for (size_t i = 0; i < ra.size(); ++i) {
    s.ab += ra[i] * rb[i];
    s.aa += ra[i] * ra[i];
    s.bb += rb[i] * rb[i];
  }
  return s;
}

OutlierCounts outlier_counts(const std::vector<std::vector<float>>& volumes, const std::vector<uint8_t>& mask,
                             double scale) {
  OutlierCounts out;
  out.sure.assign(volumes.size(), 0);
  out.borderline.assign(volumes.size(), 0);
  std::vector<double> series(volumes.size()), deviation(volumes.size());
  for (size_t v = 0; v < mask.size(); ++v) {
    if (mask[v] == 0) continue;
    bool finite = true;
    for (size_t t = 0; t < volumes.size(); ++t) {
      series[t] = volumes[t][v];
      finite = finite && std::isfinite(series[t]);
    }
    if (!finite) continue;
    const double med = median(series);
    for (size_t t = 0; t < series.size(); ++t) deviation[t] = std::abs(series[t] - med);
    const double mad = median(deviation);
    if (!(mad > 0.0)) continue;
    const double limit = scale * mad;
    for (size_t t = 0; t < series.size(); ++t) {
      if (deviation[t] > limit * (1 + 1e-5)) {
        ++out.sure[t];
      } else if (deviation[t] > limit * (1 - 1e-5)) {
        ++out.borderline[t];
      }
    }
  }
  return out;
}

}  // namespace rtf::reference
