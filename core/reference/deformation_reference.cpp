// Double-precision deformation-field reference: see deformation_reference.hpp.
#include "core/reference/deformation_reference.hpp"

#include <Eigen/Core>
#include <Eigen/LU>
#include <algorithm>
#include <cmath>

#include "core/reference/resample_reference.hpp"
#include "core/reference/smoothing_reference.hpp"
#include "core/registration/point_sampling.hpp"

namespace rtf::reference {

namespace {

size_t count_of(const Dims& dims) {
  return static_cast<size_t>(dims[0] * dims[1] * dims[2]);
}

Eigen::Vector3d voxel_position(size_t i, const Dims& dims) {
  const auto nx = static_cast<size_t>(dims[0]), ny = static_cast<size_t>(dims[1]);
  return {static_cast<double>(i % nx), static_cast<double>((i / nx) % ny), static_cast<double>(i / (nx * ny))};
}

Eigen::Vector3d field_value(std::span<const double> field, size_t i, size_t n) {
  return {field[i], field[n + i], field[2 * n + i]};
}

// The field sampled at voxel coordinates p: trilinear per component with the taps clamped to the grid; in double
// throughout.
Eigen::Vector3d sample_field(std::span<const double> field, const Dims& dims, const Eigen::Vector3d& p) {
  const size_t n = count_of(dims);
  Eigen::Vector3d c;
  for (int a = 0; a < 3; ++a) c[a] = std::clamp(p[a], 0.0, static_cast<double>(dims[static_cast<size_t>(a)] - 1));
  int64_t base[3];
  double frac[3];
  for (int a = 0; a < 3; ++a) {
    const int64_t na = dims[static_cast<size_t>(a)];
    base[a] = std::min<int64_t>(static_cast<int64_t>(std::floor(c[a])), std::max<int64_t>(na - 2, 0));
    frac[a] = c[a] - static_cast<double>(base[a]);
  }
  Eigen::Vector3d out = Eigen::Vector3d::Zero();
  for (int dz = 0; dz <= 1; ++dz) {
    for (int dy = 0; dy <= 1; ++dy) {
      for (int dx = 0; dx <= 1; ++dx) {
        const double w =
            (dx ? frac[0] : 1.0 - frac[0]) * (dy ? frac[1] : 1.0 - frac[1]) * (dz ? frac[2] : 1.0 - frac[2]);
        if (w == 0.0) continue;
        const int64_t x = std::min(base[0] + dx, dims[0] - 1), y = std::min(base[1] + dy, dims[1] - 1),
                      z = std::min(base[2] + dz, dims[2] - 1);
        const auto i = static_cast<size_t>((z * dims[1] + y) * dims[0] + x);
        out += w * field_value(field, i, n);
      }
    }
  }
  return out;
}

std::vector<double> to_double(std::span<const float> v) {
  return {v.begin(), v.end()};
}

// Central difference of `volume` along `axis` at voxel i (x, y, z), one-sided on the grid's faces.
double difference(std::span<const float> volume, const Dims& dims, int64_t x, int64_t y, int64_t z, int axis) {
  int64_t lo[3] = {x, y, z}, hi[3] = {x, y, z};
  hi[axis] = std::min(hi[axis] + 1, dims[static_cast<size_t>(axis)] - 1);
  lo[axis] = std::max<int64_t>(lo[axis] - 1, 0);
  const int64_t span = hi[axis] - lo[axis];
  if (span == 0) return 0.0;
  const auto at = [&](const int64_t* p) {
    return static_cast<double>(volume[static_cast<size_t>((p[2] * dims[1] + p[1]) * dims[0] + p[0])]);
  };
  return (at(hi) - at(lo)) / static_cast<double>(span);
}

}  // namespace

std::vector<double> compose_fields(std::span<const float> a, std::span<const float> b, const Dims& dims, double scale) {
  const size_t n = count_of(dims);
  const std::vector<double> ad = to_double(a);
  const std::vector<double> bd = to_double(b);
  std::vector<double> out(3 * n);
  for (size_t i = 0; i < n; ++i) {
    const Eigen::Vector3d ua = scale * field_value(ad, i, n);
    const Eigen::Vector3d c = ua + scale * sample_field(bd, dims, voxel_position(i, dims) + ua);
    for (size_t k = 0; k < 3; ++k) out[k * n + i] = c[static_cast<int>(k)];
  }
  return out;
}

std::vector<double> field_exponential(std::span<const float> v, const Dims& dims, int squarings) {
  const size_t n = count_of(dims);
  std::vector<double> u = to_double(v);
  const double scale = std::ldexp(1.0, -squarings);
  for (double& x : u) x *= scale;
  std::vector<double> next(3 * n);
  for (int k = 0; k < squarings; ++k) {
    for (size_t i = 0; i < n; ++i) {
      const Eigen::Vector3d ui = field_value(u, i, n);
      const Eigen::Vector3d c = ui + sample_field(u, dims, voxel_position(i, dims) + ui);
      for (size_t a = 0; a < 3; ++a) next[a * n + i] = c[static_cast<int>(a)];
    }
    u.swap(next);
  }
  return u;
}

std::vector<double> warp_volume(std::span<const float> moving, std::span<const float> u, const Dims& dims) {
  const size_t n = count_of(dims);
  std::vector<double> out(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const Eigen::Vector3d d(u[i], u[n + i], u[2 * n + i]);
    const Eigen::Vector3d p = voxel_position(i, dims) + d;
    if (inside_volume(dims, p)) out[i] = sample_clamped(moving, dims, p, ResampleInterpolation::kLinear);
  }
  return out;
}

std::vector<double> volume_gradient(std::span<const float> volume, const Dims& dims) {
  const size_t n = count_of(dims);
  std::vector<double> g(3 * n, 0.0);
  for (int64_t z = 1; z + 1 < dims[2]; ++z) {
    for (int64_t y = 1; y + 1 < dims[1]; ++y) {
      for (int64_t x = 1; x + 1 < dims[0]; ++x) {
        const auto i = static_cast<size_t>((z * dims[1] + y) * dims[0] + x);
        for (int a = 0; a < 3; ++a) g[static_cast<size_t>(a) * n + i] = difference(volume, dims, x, y, z, a);
      }
    }
  }
  return g;
}

LnccForce lncc_force(std::span<const float> fixed, std::span<const float> warped, const Dims& dims,
                     const std::array<std::vector<double>, 3>& window_taps, double eps_fixed, double eps_moving) {
  const size_t n = count_of(dims);
  std::vector<float> jj(n), fj(n), ff(n);
  for (size_t i = 0; i < n; ++i) {
    jj[i] = warped[i] * warped[i];
    fj[i] = fixed[i] * warped[i];
    ff[i] = fixed[i] * fixed[i];
  }
  const std::vector<double> mf = smooth_volume(fixed, dims, window_taps);
  const std::vector<double> mj = smooth_volume(warped, dims, window_taps);
  const std::vector<double> mff = smooth_volume(ff, dims, window_taps);
  const std::vector<double> mjj = smooth_volume(jj, dims, window_taps);
  const std::vector<double> mfj = smooth_volume(fj, dims, window_taps);
  const std::vector<double> grad = volume_gradient(warped, dims);
  LnccForce out{std::vector<double>(3 * n, 0.0), std::vector<double>(n, 0.0)};
  for (size_t i = 0; i < n; ++i) {
    const double sff = mff[i] - mf[i] * mf[i];
    const double sjj = mjj[i] - mj[i] * mj[i];
    const double sfj = mfj[i] - mf[i] * mj[i];
    if (!(sff > eps_fixed) || !(sjj > eps_moving)) continue;
    out.cc[i] = sfj * sfj / (sff * sjj);
    const double d = 2.0 * sfj / (sff * sjj) * ((fixed[i] - mf[i]) - sfj / sjj * (warped[i] - mj[i]));
    for (size_t a = 0; a < 3; ++a) out.force[a * n + i] = d * grad[a * n + i];
  }
  return out;
}

DemonsForce demons_force(std::span<const float> fixed, std::span<const float> warped, const Dims& dims, double alpha) {
  const size_t n = count_of(dims);
  const std::vector<double> grad = volume_gradient(warped, dims);
  DemonsForce out{std::vector<double>(3 * n, 0.0), std::vector<double>(n, 0.0)};
  for (size_t i = 0; i < n; ++i) {
    const double diff = static_cast<double>(fixed[i]) - static_cast<double>(warped[i]);
    out.cost[i] = diff * diff;
    const Eigen::Vector3d g(grad[i], grad[n + i], grad[2 * n + i]);
    const double den = g.squaredNorm() + alpha * alpha * diff * diff;
    if (!(den > 1e-12)) continue;
    for (size_t a = 0; a < 3; ++a) out.force[a * n + i] = diff * g[static_cast<int>(a)] / den;
  }
  return out;
}

std::vector<double> jacobian_determinant(std::span<const float> u, const Dims& dims) {
  const size_t n = count_of(dims);
  std::vector<double> det(n);
  for (int64_t z = 0; z < dims[2]; ++z) {
    for (int64_t y = 0; y < dims[1]; ++y) {
      for (int64_t x = 0; x < dims[0]; ++x) {
        const auto i = static_cast<size_t>((z * dims[1] + y) * dims[0] + x);
        Eigen::Matrix3d j = Eigen::Matrix3d::Identity();
        for (int c = 0; c < 3; ++c) {
          const std::span<const float> component = u.subspan(static_cast<size_t>(c) * n, n);
          for (int a = 0; a < 3; ++a) j(c, a) += difference(component, dims, x, y, z, a);
        }
        det[i] = j.determinant();
      }
    }
  }
  return det;
}

WarpCheck warp_check(std::span<const float> det, std::span<const float> residual, std::span<const float> mask_image) {
  const size_t n = det.size();
  WarpCheck c;
  c.min_det = INFINITY;
  c.max_det = -INFINITY;
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    c.min_det = std::min(c.min_det, static_cast<double>(det[i]));
    c.max_det = std::max(c.max_det, static_cast<double>(det[i]));
    const bool in_mask = mask_image[i] > 0.0f;
    if (!(det[i] > 0.0f)) {
      ++c.folded;
      if (in_mask) ++c.folded_in_mask;
    }
    if (!in_mask) continue;
    const double e = std::sqrt(static_cast<double>(residual[i]) * residual[i] +
                               static_cast<double>(residual[n + i]) * residual[n + i] +
                               static_cast<double>(residual[2 * n + i]) * residual[2 * n + i]);
    ++c.in_mask;
    sum += e;
    c.max_residual = std::max(c.max_residual, e);
  }
  c.mean_residual = c.in_mask > 0 ? sum / static_cast<double>(c.in_mask) : 0.0;
  return c;
}

}  // namespace rtf::reference
