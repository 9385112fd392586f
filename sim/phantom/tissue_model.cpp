// CSF / GM / WM classification of a T1 template: histogram k-means and piecewise-linear partial-volume fractions.
#include "sim/phantom/tissue_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace rtf::sim {
namespace {

constexpr int kBins = 1024;
constexpr int64_t kMargin = 2;  // empty voxels kept around the brain's bounding box

bool is_brain(float v) {
  return std::isfinite(v) && v > 0.0f;
}

}  // namespace

std::array<double, 3> kmeans3(const std::vector<float>& values) {
  if (values.empty()) throw std::invalid_argument("tissue model: no brain voxels to classify");
  const auto [lo_it, hi_it] = std::minmax_element(values.begin(), values.end());
  const double lo = *lo_it;
  const double hi = *hi_it;
  if (!(hi > lo)) throw std::invalid_argument("tissue model: the brain has a single intensity; cannot find 3 classes");
  const double width = (hi - lo) / kBins;
  std::vector<double> count(kBins, 0.0);
  for (float v : values) count[std::min(kBins - 1, static_cast<int>((v - lo) / width))] += 1.0;
  auto centre_of = [&](int b) { return lo + (b + 0.5) * width; };

  // Initial centres: percentiles 10, 50, 90 of the histogram.
  std::array<double, 3> c{};
  const std::array<double, 3> quantile{0.1, 0.5, 0.9};
  double cumulative = 0.0;
  int q = 0;
  for (int b = 0; b < kBins && q < 3; ++b) {
    cumulative += count[b];
    while (q < 3 && cumulative >= quantile[q] * static_cast<double>(values.size())) c[q++] = centre_of(b);
  }
  if (c[0] == c[1] || c[1] == c[2]) c = {lo + (hi - lo) / 6, lo + (hi - lo) / 2, lo + 5 * (hi - lo) / 6};

  for (int iter = 0; iter < 200; ++iter) {
    std::array<double, 3> sum{}, n{};
    for (int b = 0; b < kBins; ++b) {
      if (count[b] == 0.0) continue;
      const double x = centre_of(b);
      int best = 0;
      for (int k = 1; k < 3; ++k) {
        if (std::abs(x - c[k]) < std::abs(x - c[best])) best = k;
      }
      sum[best] += count[b] * x;
      n[best] += count[b];
    }
    std::array<double, 3> next = c;
    for (int k = 0; k < 3; ++k) {
      if (n[k] > 0.0) next[k] = sum[k] / n[k];
    }
    std::sort(next.begin(), next.end());
    const bool converged =
        std::abs(next[0] - c[0]) + std::abs(next[1] - c[1]) + std::abs(next[2] - c[2]) < 1e-9 * (hi - lo);
    c = next;
    if (converged) break;
  }
  if (!(c[0] < c[1] && c[1] < c[2])) {
    throw std::invalid_argument(
        fmt::format("tissue model: k-means found fewer than 3 classes (centres {}, {}, {})", c[0], c[1], c[2]));
  }
  return c;
}

std::array<float, 3> tissue_fractions(double t1, const std::array<double, 3>& c) {
  if (t1 <= c[0]) return {1.0f, 0.0f, 0.0f};
  if (t1 >= c[2]) return {0.0f, 0.0f, 1.0f};
  if (t1 < c[1]) {
    const auto gm = static_cast<float>((t1 - c[0]) / (c[1] - c[0]));
    return {1.0f - gm, gm, 0.0f};
  }
  const auto wm = static_cast<float>((t1 - c[1]) / (c[2] - c[1]));
  return {0.0f, 1.0f - wm, wm};
}

TissueModel build_tissue_model(const Image& t1) {
  const int64_t nx = t1.nx(), ny = t1.ny(), nz = t1.nz();
  const auto vol = t1.volume(0);
  std::array<int64_t, 3> lo{nx, ny, nz}, hi{-1, -1, -1};
  std::vector<float> brain;
  for (int64_t z = 0; z < nz; ++z) {
    for (int64_t y = 0; y < ny; ++y) {
      for (int64_t x = 0; x < nx; ++x) {
        const float v = vol[static_cast<size_t>((z * ny + y) * nx + x)];
        if (!is_brain(v)) continue;
        brain.push_back(v);
        const int64_t p[3] = {x, y, z};
        for (int a = 0; a < 3; ++a) {
          lo[a] = std::min(lo[a], p[a]);
          hi[a] = std::max(hi[a], p[a]);
        }
      }
    }
  }
  if (brain.empty()) {
    throw std::invalid_argument("tissue model: the template has no voxel > 0; it must be a brain-extracted T1");
  }
  TissueModel m;
  m.centres = kmeans3(brain);
  m.brain_voxels = static_cast<int64_t>(brain.size());
  brain.clear();
  brain.shrink_to_fit();

  const Eigen::Matrix4d& a = t1.header().affine;
  m.brain_min_mm = Eigen::Vector3d::Constant(std::numeric_limits<double>::max());
  m.brain_max_mm = Eigen::Vector3d::Constant(std::numeric_limits<double>::lowest());
  for (int corner = 0; corner < 8; ++corner) {  // world bounding box of the voxel-index box's corners
    const Eigen::Vector4d v((corner & 1) ? hi[0] : lo[0], (corner & 2) ? hi[1] : lo[1], (corner & 4) ? hi[2] : lo[2],
                            1.0);
    const Eigen::Vector3d w = (a * v).head<3>();
    m.brain_min_mm = m.brain_min_mm.cwiseMin(w);
    m.brain_max_mm = m.brain_max_mm.cwiseMax(w);
  }

  std::array<int64_t, 3> origin{};
  for (int ax = 0; ax < 3; ++ax) {
    origin[ax] = lo[ax] - kMargin;
    m.dims[ax] = hi[ax] - lo[ax] + 1 + 2 * kMargin;
  }
  Eigen::Matrix4d shift = Eigen::Matrix4d::Identity();
  for (int ax = 0; ax < 3; ++ax) shift(ax, 3) = static_cast<double>(origin[ax]);
  m.affine = a * shift;

  m.fractions.assign(static_cast<size_t>(m.voxels()), {0.0f, 0.0f, 0.0f});
  for (int64_t z = 0; z < m.dims[2]; ++z) {
    const int64_t sz = z + origin[2];
    for (int64_t y = 0; y < m.dims[1]; ++y) {
      const int64_t sy = y + origin[1];
      for (int64_t x = 0; x < m.dims[0]; ++x) {
        const int64_t sx = x + origin[0];
        if (sx < 0 || sy < 0 || sz < 0 || sx >= nx || sy >= ny || sz >= nz) continue;
        const float v = vol[static_cast<size_t>((sz * ny + sy) * nx + sx)];
        if (!is_brain(v)) continue;
        const auto f = tissue_fractions(v, m.centres);
        m.fractions[static_cast<size_t>((z * m.dims[1] + y) * m.dims[0] + x)] = f;
        const int hard = static_cast<int>(std::max_element(f.begin(), f.end()) - f.begin());
        ++m.counts[hard];
      }
    }
  }
  return m;
}

}  // namespace rtf::sim
