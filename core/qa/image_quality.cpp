// MRIQC's functional image-quality metrics (core/qa/image_quality.hpp), written from the published definitions
// (docs/algorithms/qa.md, "MRIQC's image-quality metrics"): the image measures in one or two passes over the mean
// EPI; the series measures in one pass over the run, a block of the mask's voxels at a time (their series gathered
// from every volume, then each voxel's moments, lag-1 sum and interquartile range, and its contributions to the
// per-volume DVARS sums and to the GCOR mean series).
#include "core/qa/image_quality.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <utility>

#include "core/util/host_threads.hpp"

namespace rtf {

namespace {

// The median of `values` (the mean of the two middle ones for an even count, as numpy); NaN when empty. Reorders.
double median_of(std::vector<double>& values) {
  if (values.empty()) return kIqmNaN;
  const size_t k = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  const double upper = values[k];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k));
  return 0.5 * (lower + upper);
}

double mean_of(const std::vector<double>& values) {
  if (values.empty()) return kIqmNaN;
  double sum = 0;
  for (const double x : values) sum += x;
  return sum / static_cast<double>(values.size());
}

// MRIQC's EFC: E = Σ (x/b) ln(x/b) with b = sqrt(Σ x²) over every voxel of the image, divided by its value for a
// constant image of as many voxels, N (1/√N) ln(1/√N).
double efc(const std::vector<double>& x) {
  const auto n = static_cast<double>(x.size());
  double energy = 0;
  for (const double v : x) energy += v * v;
  const double b = std::sqrt(energy);
  const double efc_max = n * (1.0 / std::sqrt(n)) * std::log(1.0 / std::sqrt(n));
  if (!(b > 0) || efc_max == 0) return kIqmNaN;
  double e = 0;
  for (const double v : x) {
    if (v > 0) e += (v / b) * std::log(v / b);  // a voxel of 0 adds 0 (MRIQC's +1e-16 inside the log)
  }
  return e / efc_max;
}

// MRIQC's FBER: the median of x² inside the mask over the median outside; -1 when the outside's is below 1e-3.
double fber(const std::vector<double>& x, std::span<const uint8_t> mask) {
  std::vector<double> inside, outside;
  for (size_t i = 0; i < x.size(); ++i) (mask[i] != 0 ? inside : outside).push_back(x[i] * x[i]);
  const double fg = median_of(inside);
  const double bg = median_of(outside);
  if (!std::isfinite(fg) || !std::isfinite(bg)) return kIqmNaN;
  if (bg < 1e-3) return -1.0;
  return fg / bg;
}

// The mask eroded once by the 3x3x3 cube without its 8 corners (18-connectivity, scipy's
// generate_binary_structure(3, 2)); outside the grid counts as outside the mask (scipy's border_value 0).
std::vector<uint8_t> erode18(std::span<const uint8_t> mask, std::array<int64_t, 3> d) {
  std::vector<uint8_t> out(mask.size(), 0);
  const auto inside = [&](int64_t x, int64_t y, int64_t z) {
    return x >= 0 && y >= 0 && z >= 0 && x < d[0] && y < d[1] && z < d[2] &&
           mask[static_cast<size_t>(x + d[0] * (y + d[1] * z))] != 0;
  };
  for (int64_t z = 0; z < d[2]; ++z) {
    for (int64_t y = 0; y < d[1]; ++y) {
      for (int64_t x = 0; x < d[0]; ++x) {
        bool keep = inside(x, y, z);
        for (int dz = -1; keep && dz <= 1; ++dz) {
          for (int dy = -1; keep && dy <= 1; ++dy) {
            for (int dx = -1; keep && dx <= 1; ++dx) {
              if (std::abs(dx) + std::abs(dy) + std::abs(dz) <= 2) keep = inside(x + dx, y + dy, z + dz);
            }
          }
        }
        out[static_cast<size_t>(x + d[0] * (y + d[1] * z))] = keep ? 1 : 0;
      }
    }
  }
  return out;
}

// MRIQC's functional SNR: inside the mask eroded once, the median over the SD with n - 1 (σ √(n/(n-1))).
double snr(const std::vector<double>& x, std::span<const uint8_t> mask, std::array<int64_t, 3> dims) {
  const std::vector<uint8_t> eroded = erode18(mask, dims);
  std::vector<double> values;
  for (size_t i = 0; i < x.size(); ++i) {
    if (eroded[i] != 0) values.push_back(x[i]);
  }
  if (values.size() < 2) return kIqmNaN;
  const double mean = mean_of(values);
  double ss = 0;
  for (const double v : values) ss += (v - mean) * (v - mean);
  const double sd = std::sqrt(ss / static_cast<double>(values.size() - 1));
  const double median = median_of(values);
  return sd > 0 ? median / sd : kIqmNaN;
}

// MRIQC's GSR along `axis`: the ghost mask is the brain mask rolled by N/2 (numpy's roll: voxel c takes the mask at
// c − N/2 mod N), outside the brain; (mean over the ghost − mean over the rest of the background) / median in the
// brain.
double gsr(const std::vector<double>& x, std::span<const uint8_t> mask, std::array<int64_t, 3> d, int axis) {
  const int64_t n = d[static_cast<size_t>(axis)];
  const int64_t shift = n / 2;
  const std::array<int64_t, 3> stride{1, d[0], d[0] * d[1]};
  double ghost_sum = 0, rest_sum = 0;
  int64_t ghost_count = 0, rest_count = 0;
  std::vector<double> signal;
  for (int64_t z = 0; z < d[2]; ++z) {
    for (int64_t y = 0; y < d[1]; ++y) {
      for (int64_t x0 = 0; x0 < d[0]; ++x0) {
        const int64_t i = x0 + d[0] * (y + d[1] * z);
        const double v = x[static_cast<size_t>(i)];
        if (mask[static_cast<size_t>(i)] != 0) {
          signal.push_back(v);
          continue;
        }
        const int64_t c = axis == 0 ? x0 : y;
        const int64_t source = i + (((c - shift) % n + n) % n - c) * stride[static_cast<size_t>(axis)];
        if (mask[static_cast<size_t>(source)] != 0) {
          ghost_sum += v;
          ++ghost_count;
        } else {
          rest_sum += v;
          ++rest_count;
        }
      }
    }
  }
  const double s = median_of(signal);
  if (ghost_count == 0 || rest_count == 0 || !std::isfinite(s) || s == 0) return kIqmNaN;
  return (ghost_sum / static_cast<double>(ghost_count) - rest_sum / static_cast<double>(rest_count)) / s;
}

// AFNI 3dFWHMx's classic estimate (its mri_estimate_FWHM_1dif): inside the mask the sample variance of the values
// and, per axis, of the first differences between neighbours both inside; FWHM = sqrt(8 ln 2) · sqrt(−1 / (4 ln(1 −
// var_d / (2 var)))) · voxel size. NaN where 3dFWHMx reports a failure (fewer than 9 voxels, no variance, fewer than
// 6 differences, or 1 − var_d / (2 var) outside (0, 1)).
std::array<double, 3> fwhm(const std::vector<double>& x, std::span<const uint8_t> mask, std::array<int64_t, 3> d,
                           std::array<double, 3> voxel_mm) {
  std::array<double, 3> out{kIqmNaN, kIqmNaN, kIqmNaN};
  double sum = 0;
  int64_t count = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (mask[i] != 0) {
      sum += x[i];
      ++count;
    }
  }
  if (count < 9) return out;
  const double mean = sum / static_cast<double>(count);
  double ss = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (mask[i] != 0) ss += (x[i] - mean) * (x[i] - mean);
  }
  const double var = ss / static_cast<double>(count - 1);
  if (!(var > 0)) return out;
  const std::array<int64_t, 3> stride{1, d[0], d[0] * d[1]};
  for (size_t a = 0; a < 3; ++a) {
    // Two passes over the differences: their mean, then their squared deviations.
    double dsum = 0;
    int64_t dcount = 0;
    const auto each_difference = [&](auto&& f) {
      for (int64_t z = 0; z < d[2]; ++z) {
        for (int64_t y = 0; y < d[1]; ++y) {
          for (int64_t x0 = 0; x0 < d[0]; ++x0) {
            const std::array<int64_t, 3> c{x0, y, z};
            if (c[a] + 1 >= d[a]) continue;
            const int64_t i = x0 + d[0] * (y + d[1] * z);
            const int64_t j = i + stride[a];
            if (mask[static_cast<size_t>(i)] != 0 && mask[static_cast<size_t>(j)] != 0) {
              f(x[static_cast<size_t>(j)] - x[static_cast<size_t>(i)]);
            }
          }
        }
      }
    };
    each_difference([&](double dv) {
      dsum += dv;
      ++dcount;
    });
    if (dcount < 6) continue;
    const double dmean = dsum / static_cast<double>(dcount);
    double dss = 0;
    each_difference([&](double dv) { dss += (dv - dmean) * (dv - dmean); });
    const double arg = 1.0 - 0.5 * (dss / static_cast<double>(dcount - 1)) / var;
    if (arg <= 0 || arg >= 1) continue;
    out[a] = std::sqrt(8.0 * std::numbers::ln2) * std::sqrt(-1.0 / (4.0 * std::log(arg))) * voxel_mm[a];
  }
  return out;
}

void check_image(size_t image, size_t mask, std::array<int64_t, 3> dims, std::array<double, 3> voxel_mm) {
  for (const int64_t n : dims) {
    if (n < 1) throw std::invalid_argument(fmt::format("image_quality: grid {}x{}x{}", dims[0], dims[1], dims[2]));
  }
  const auto voxels = static_cast<size_t>(dims[0] * dims[1] * dims[2]);
  if (image != voxels || mask != voxels) {
    throw std::invalid_argument(fmt::format("image_quality: {} image and {} mask values for a {}x{}x{} grid", image,
                                            mask, dims[0], dims[1], dims[2]));
  }
  for (const double mm : voxel_mm) {
    if (!(mm > 0) || !std::isfinite(mm)) {
      throw std::invalid_argument(fmt::format("image_quality: voxel size {} mm", mm));
    }
  }
}

// Σ f(t) over [begin, end) in four partial sums: independent chains of additions, ~4x faster than one on the
// hundreds of values of a voxel's series.
template <typename F>
double sum4(size_t begin, size_t end, F f) {
  double a = 0, b = 0, c = 0, d = 0;
  size_t t = begin;
  for (; t + 4 <= end; t += 4) {
    a += f(t);
    b += f(t + 1);
    c += f(t + 2);
    d += f(t + 3);
  }
  for (; t < end; ++t) a += f(t);
  return (a + b) + (c + d);
}

// The k_lo-th and k_hi-th smallest of `a` (k_lo <= k_hi < a.size()), reordering `a` (`spare` of a.size() is
// scratch): quickselect with a branch-free three-way partition (less, equal, greater than the pivot), ~3x faster than
// std::nth_element twice on the short, tie-rich series of BOLD voxels.
std::pair<double, double> select_two(std::vector<float>& a, size_t k_lo, size_t k_hi, std::vector<float>& spare) {
  double result[2] = {0, 0};
  const size_t want[2] = {k_lo, k_hi};
  // Ranges still to search, each with the targets (0, 1 or both) it holds.
  struct Range {
    size_t lo, hi;
    int first, last;  // targets first..last (inclusive)
  };
  Range stack[2];
  int depth = 0;
  stack[depth++] = Range{0, a.size(), 0, 1};
  float* v = a.data();
  float* greater = spare.data();
  while (depth > 0) {
    Range r = stack[--depth];
    while (true) {
      const size_t n = r.hi - r.lo;
      if (n <= 16) {  // small: sort it
        std::sort(v + r.lo, v + r.hi);
        for (int k = r.first; k <= r.last; ++k) result[k] = v[want[k]];
        break;
      }
      // Median of three as the pivot.
      float p0 = v[r.lo], p1 = v[r.lo + n / 2], p2 = v[r.hi - 1];
      if (p0 > p1) std::swap(p0, p1);
      if (p1 > p2) std::swap(p1, p2);
      if (p0 > p1) std::swap(p0, p1);
      const float pivot = p1;
      // Less-than in place (the write index never passes the read index), greater-than into `greater`.
      size_t nl = r.lo, ng = 0;
      for (size_t i = r.lo; i < r.hi; ++i) {
        const float x = v[i];
        v[nl] = x;
        greater[ng] = x;
        nl += static_cast<size_t>(x < pivot);
        ng += static_cast<size_t>(x > pivot);
      }
      const size_t eq_end = r.hi - ng;
      std::fill(v + nl, v + eq_end, pivot);
      std::copy(greater, greater + ng, v + eq_end);
      // Each target is in [lo, nl), [nl, eq_end) (the pivot) or [eq_end, hi).
      const auto part = [&](size_t k) { return k < nl ? 0 : (k < eq_end ? 1 : 2); };
      for (int k = r.first; k <= r.last; ++k) {
        if (part(want[k]) == 1) result[k] = pivot;
      }
      int a0 = r.first, a1 = r.last;
      while (a0 <= a1 && part(want[a0]) == 1) ++a0;
      while (a1 >= a0 && part(want[a1]) == 1) --a1;
      if (a0 > a1) break;
      const auto range_of = [&](int k) {
        return part(want[k]) == 0 ? Range{r.lo, nl, k, k} : Range{eq_end, r.hi, k, k};
      };
      if (a0 != a1 && part(want[a0]) != part(want[a1])) {
        stack[depth++] = range_of(a1);
        r = range_of(a0);
      } else {
        r = range_of(a0);
        r.last = a1;
      }
    }
  }
  return {result[0], result[1]};
}
}  // namespace

ImageQuality image_quality(std::span<const float> mean_epi, std::span<const uint8_t> mask, std::array<int64_t, 3> dims,
                           std::array<double, 3> voxel_mm) {
  check_image(mean_epi.size(), mask.size(), dims, voxel_mm);
  // MRIQC's preparation of the mean EPI: non-finite values to 0 (nan_to_num), negative ones to 0.
  std::vector<double> x(mean_epi.size());
  std::transform(mean_epi.begin(), mean_epi.end(), x.begin(),
                 [](float v) { return std::isfinite(v) && v > 0 ? static_cast<double>(v) : 0.0; });
  ImageQuality q;
  q.efc = efc(x);
  const bool any_inside = std::any_of(mask.begin(), mask.end(), [](uint8_t m) { return m != 0; });
  if (!any_inside) return q;
  q.fber = fber(x, mask);
  q.snr = snr(x, mask, dims);
  q.gsr_x = gsr(x, mask, dims, 0);
  q.gsr_y = gsr(x, mask, dims, 1);
  const std::array<double, 3> f = fwhm(x, mask, dims, voxel_mm);
  q.fwhm_x = f[0];
  q.fwhm_y = f[1];
  q.fwhm_z = f[2];
  // 3dFWHMx's combined value: the geometric mean of the axes it could estimate.
  double log_sum = 0;
  int estimated = 0;
  for (const double v : f) {
    if (std::isfinite(v)) {
      log_sum += std::log(v);
      ++estimated;
    }
  }
  if (estimated > 0) q.fwhm_avg = std::exp(log_sum / estimated);
  return q;
}

SeriesQuality series_quality(std::span<const float> volumes, int64_t count, int64_t voxels,
                             std::span<const uint8_t> mask) {
  if (count < 0 || voxels < 0 || volumes.size() != static_cast<size_t>(count) * static_cast<size_t>(voxels) ||
      mask.size() != static_cast<size_t>(voxels)) {
    throw std::invalid_argument(fmt::format("series_quality: {} values for {} volumes of {} voxels, {} mask values",
                                            volumes.size(), count, voxels, mask.size()));
  }
  SeriesQuality q;
  const auto nt = static_cast<size_t>(count);
  q.dvars_std.assign(nt, kIqmNaN);
  q.dvars_vstd.assign(nt, kIqmNaN);
  std::vector<int64_t> inside;
  for (int64_t v = 0; v < voxels; ++v) {
    if (mask[static_cast<size_t>(v)] != 0) inside.push_back(v);
  }
  if (count < 2 || inside.empty()) return q;

  // Per volume t ≥ 1: Σ over kept voxels of d², and of (d / sd_hat)², d = x_t − x_{t−1} (DVARS); the sum of the
  // unit-length demeaned series (GCOR). The mask's voxels are split into kParts contiguous parts, each summed on a
  // thread of its own and the parts added in order: the same result on any number of cores.
  struct Sums {
    std::vector<double> diff_sq, diff_sq_std, unit_sum;
    double sd_hat_sum = 0;
    int64_t kept = 0, gcor_voxels = 0, varying = 0;
  };
  constexpr size_t kParts = 32;
  std::vector<Sums> parts(kParts);
  // Robust SD: (P75 − P25) / 1.349 with numpy's "lower" percentiles (FSL's, as nipype's compute_dvars).
  const size_t k25 = (nt - 1) / 4;      // floor(0.25 (n − 1))
  const size_t k75 = 3 * (nt - 1) / 4;  // floor(0.75 (n − 1))
  constexpr size_t kAhead = 8;          // volumes prefetched ahead of the gather
  constexpr size_t kBlock = 64;         // voxels gathered at a time: 64 series of `nt` floats stay in cache
  const size_t blocks = (inside.size() + kBlock - 1) / kBlock;
  host_ranges(blocks, std::min(kParts, blocks), [&](size_t first_block, size_t last_block, size_t part) {
    Sums& sums = parts[part];
    sums.diff_sq.assign(nt, 0.0);
    sums.diff_sq_std.assign(nt, 0.0);
    sums.unit_sum.assign(nt, 0.0);
    std::vector<float> block(kBlock * nt), scratch(nt), spare(nt);
    std::vector<double> y(nt);
    for (size_t b0 = first_block * kBlock; b0 < std::min(last_block * kBlock, inside.size()); b0 += kBlock) {
      const size_t nb = std::min(kBlock, inside.size() - b0);
      for (size_t t = 0; t < nt; ++t) {
        const float* volume = volumes.data() + t * static_cast<size_t>(voxels);
        if (t + kAhead < nt) {  // volumes are megabytes apart: no hardware prefetcher follows this stride
          for (size_t j = 0; j < nb; j += 16)
            __builtin_prefetch(volume + kAhead * static_cast<size_t>(voxels) + inside[b0 + j]);
          __builtin_prefetch(volume + kAhead * static_cast<size_t>(voxels) + inside[b0 + nb - 1]);
        }
        for (size_t j = 0; j < nb; ++j) block[j * nt + t] = volume[inside[b0 + j]];
      }
      for (size_t j = 0; j < nb; ++j) {
        const float* x = block.data() + j * nt;
        const double sum = sum4(0, nt, [&](size_t t) { return static_cast<double>(x[t]); });
        if (!std::isfinite(sum)) continue;  // a non-finite value (a sum of floats in double cannot overflow)
        ++sums.gcor_voxels;
        const double mean = sum / static_cast<double>(nt);
        for (size_t t = 0; t < nt; ++t) y[t] = static_cast<double>(x[t]) - mean;
        const double ss = sum4(0, nt, [&](size_t t) { return y[t] * y[t]; });
        const double lag1 = sum4(1, nt, [&](size_t t) { return y[t - 1] * y[t]; });
        if (!(ss > 0)) continue;  // constant: a zero vector in GCOR's mean, no DVARS
        ++sums.varying;
        const double norm = 1.0 / std::sqrt(ss);
        for (size_t t = 0; t < nt; ++t) sums.unit_sum[t] += y[t] * norm;

        std::copy(x, x + nt, scratch.begin());
        const auto [p25, p75] = select_two(scratch, k25, k75, spare);
        const double robust_sd = (p75 - p25) / 1.349;
        const double ar1 = lag1 / ss;  // Yule-Walker AR(1) of the demeaned series: r1 / r0
        const double sd_hat = std::sqrt(2.0 * (1.0 - ar1)) * robust_sd;  // predicted SD of the differences
        if (!(robust_sd > 0) || !(sd_hat > 0)) continue;
        ++sums.kept;
        sums.sd_hat_sum += sd_hat;
        const double inv = 1.0 / sd_hat;
        for (size_t t = 1; t < nt; ++t) {
          const double d = static_cast<double>(x[t]) - static_cast<double>(x[t - 1]);
          sums.diff_sq[t] += d * d;
          sums.diff_sq_std[t] += (d * inv) * (d * inv);
        }
      }
    }
  });
  std::vector<double> diff_sq(nt, 0.0), diff_sq_std(nt, 0.0), unit_sum(nt, 0.0);
  double sd_hat_sum = 0;
  int64_t kept = 0, gcor_voxels = 0, varying = 0;
  for (const Sums& part : parts) {
    if (part.diff_sq.empty()) continue;  // a part that got no block
    for (size_t t = 0; t < nt; ++t) {
      diff_sq[t] += part.diff_sq[t];
      diff_sq_std[t] += part.diff_sq_std[t];
      unit_sum[t] += part.unit_sum[t];
    }
    sd_hat_sum += part.sd_hat_sum;
    kept += part.kept;
    gcor_voxels += part.gcor_voxels;
    varying += part.varying;
  }
  q.dvars_voxels = kept;
  q.gcor_voxels = gcor_voxels;
  if (kept > 0) {
    const double diff_sd_mean = sd_hat_sum / static_cast<double>(kept);
    double std_sum = 0, vstd_sum = 0;
    for (size_t t = 1; t < nt; ++t) {
      q.dvars_std[t] = std::sqrt(diff_sq[t] / static_cast<double>(kept)) / diff_sd_mean;
      q.dvars_vstd[t] = std::sqrt(diff_sq_std[t] / static_cast<double>(kept));
      std_sum += q.dvars_std[t];
      vstd_sum += q.dvars_vstd[t];
    }
    q.dvars_std_mean = std_sum / static_cast<double>(nt - 1);
    q.dvars_vstd_mean = vstd_sum / static_cast<double>(nt - 1);
  }
  if (varying > 0) {
    double g = 0;
    for (size_t t = 0; t < nt; ++t) {
      const double mean_unit = unit_sum[t] / static_cast<double>(gcor_voxels);
      g += mean_unit * mean_unit;
    }
    q.gcor = g;
  }
  return q;
}

}  // namespace rtf
