// Double-precision LNCC cost and gradient of linear registration: see linear_lncc_reference.hpp.
#include "core/reference/linear_lncc_reference.hpp"

#include <Eigen/LU>
#include <cmath>

#include "core/reference/linear_registration_reference.hpp"
#include "core/reference/smoothing_reference.hpp"

namespace rtf::reference {

MiEvaluation local_correlation(const Image& fixed, const Image& moving, std::optional<std::span<const uint8_t>> mask,
                               int stride, const Eigen::Matrix4d& transform, const Eigen::Vector3d& centre,
                               const std::array<std::vector<double>, 3>& window_taps, double eps_fixed,
                               double eps_moving) {
  const auto& fd = fixed.header().dims;
  const std::array<int64_t, 3> lattice{(fd[0] + stride - 1) / stride, (fd[1] + stride - 1) / stride,
                                       (fd[2] + stride - 1) / stride};
  const auto n = static_cast<size_t>(lattice[0] * lattice[1] * lattice[2]);
  const std::vector<Eigen::Vector4d> gm = gradient_and_value(moving);
  const auto& md = moving.header().dims;
  const Eigen::Matrix4d to_moving = moving.header().affine.inverse() * transform;
  // Lattice volumes: c, c F, c F^2, J, J^2, F J (float, as the smoothing reference takes them; J = 0 outside), the
  // gradient, X - centre.
  std::array<std::vector<float>, 6> m;
  for (auto& v : m) v.resize(n);
  std::vector<Eigen::Vector3d> grad(n, Eigen::Vector3d::Zero()), d(n);
  std::vector<bool> in_mask(n, true);
  for (size_t p = 0; p < n; ++p) {
    const int64_t x = stride * static_cast<int64_t>(p % static_cast<size_t>(lattice[0]));
    const int64_t y =
        stride * static_cast<int64_t>((p / static_cast<size_t>(lattice[0])) % static_cast<size_t>(lattice[1]));
    const int64_t z = stride * static_cast<int64_t>(p / static_cast<size_t>(lattice[0] * lattice[1]));
    const size_t fi = static_cast<size_t>((z * fd[1] + y) * fd[0] + x);
    if (mask) in_mask[p] = (*mask)[fi] != 0;
    const Eigen::Vector4d world =
        fixed.header().affine *
        Eigen::Vector4d(static_cast<double>(x), static_cast<double>(y), static_cast<double>(z), 1.0);
    d[p] = world.head<3>() - centre;
    const Eigen::Vector3d u = (to_moving * world).head<3>();
    double j = 0.0;
    bool inside = true;
    for (int a = 0; a < 3; ++a)
      inside = inside && u[a] >= 0.0 && u[a] <= static_cast<double>(md[static_cast<size_t>(a)] - 1);
    if (inside) {
      const Eigen::Vector4d s = trilinear4(gm, md, u);
      j = s[3];
      grad[p] = s.head<3>();
    }
    const double f = fixed.data()[fi], c = inside ? 1.0 : 0.0;
    m[0][p] = static_cast<float>(c);
    m[1][p] = static_cast<float>(c * f);
    m[2][p] = static_cast<float>(c * f * f);
    m[3][p] = static_cast<float>(j);
    m[4][p] = static_cast<float>(j * j);
    m[5][p] = static_cast<float>(f * j);
  }
  std::array<std::vector<double>, 6> means;
  for (size_t k = 0; k < 6; ++k) means[k] = smooth_volume(m[k], lattice, window_taps);
  std::array<std::vector<float>, 4> terms;
  for (auto& t : terms) t.assign(n, 0.0f);
  MiEvaluation out;
  double cc_sum = 0.0;
  for (size_t p = 0; p < n; ++p) {
    const double cw = means[0][p];
    if (!(m[0][p] > 0.0f) || !(cw >= 0.5)) continue;
    const double mf = means[1][p] / cw, mj = means[3][p] / cw;
    const double sff = means[2][p] / cw - mf * mf, sjj = means[4][p] / cw - mj * mj, sfj = means[5][p] / cw - mf * mj;
    if (!(sff > eps_fixed) || !(sjj > eps_moving) || !in_mask[p]) continue;
    const double a = 2.0 * sfj / (cw * sff * sjj), b = a * sfj / sjj;
    cc_sum += sfj * sfj / (sff * sjj);
    ++out.count;
    terms[0][p] = static_cast<float>(a);
    terms[1][p] = static_cast<float>(a * mf);
    terms[2][p] = static_cast<float>(b);
    terms[3][p] = static_cast<float>(b * mj);
  }
  std::array<std::vector<double>, 4> smoothed;
  for (size_t k = 0; k < 4; ++k) smoothed[k] = smooth_volume(terms[k], lattice, window_taps);
  for (size_t p = 0; p < n; ++p) {
    if (!(m[0][p] > 0.0f)) continue;
    const double j = m[3][p];
    const double dj = m[1][p] * smoothed[0][p] - smoothed[1][p] - j * smoothed[2][p] + smoothed[3][p];
    const Eigen::Vector3d g = dj * grad[p];
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) out.gradient[3 * r + c] += g[r] * d[p][c];
      out.gradient[9 + r] += g[r];
    }
  }
  if (out.count > 0) {
    out.mi = cc_sum / static_cast<double>(out.count);
    out.gradient /= static_cast<double>(out.count);
  }
  return out;
}

}  // namespace rtf::reference
