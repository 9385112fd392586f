// Sliding-window CCA in double precision: explicit filter kernels, direct convolution, subset-wise restricted CCA.
#include "core/reference/cca_reference.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace rtf::reference {
namespace {

std::vector<std::array<double, 3>> directions(bool volumetric) {
  if (volumetric) {  // axes through opposite vertices of an icosahedron
    const double phi = (1.0 + std::sqrt(5.0)) / 2.0;
    const double s = 1.0 / std::sqrt(1.0 + phi * phi);
    return {{0, s, phi * s}, {0, s, -phi * s}, {s, phi * s, 0}, {s, -phi * s, 0}, {phi * s, 0, s}, {phi * s, 0, -s}};
  }
  std::vector<std::array<double, 3>> d;
  for (double degrees : {0.0, 60.0, 120.0}) {
    const double a = degrees * std::numbers::pi / 180.0;
    d.push_back({std::cos(a), std::sin(a), 0.0});
  }
  return d;
}

}  // namespace

CcaKernels cca_kernels(std::array<double, 3> voxel_mm, const CcaReferenceSpec& spec) {
  const double sigma = spec.fwhm_mm / (2.0 * std::sqrt(2.0 * std::log(2.0)));
  CcaKernels k;
  for (int a = 0; a < 3; ++a) {
    k.radius[a] =
        (!spec.volumetric && a == 2) ? 0 : static_cast<int64_t>(std::ceil(spec.truncate_sigmas * sigma / voxel_mm[a]));
  }
  const auto dirs = directions(spec.volumetric);
  k.kernels.assign(dirs.size() + 1, {});
  for (int64_t dz = -k.radius[2]; dz <= k.radius[2]; ++dz) {
    for (int64_t dy = -k.radius[1]; dy <= k.radius[1]; ++dy) {
      for (int64_t dx = -k.radius[0]; dx <= k.radius[0]; ++dx) {
        const double r[3] = {dx * voxel_mm[0], dy * voxel_mm[1], dz * voxel_mm[2]};
        const double g = std::exp(-(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]) / (2.0 * sigma * sigma));
        k.kernels[0].push_back(g);
        for (size_t i = 0; i < dirs.size(); ++i) {
          const double along = (dirs[i][0] * r[0] + dirs[i][1] * r[1] + dirs[i][2] * r[2]) / sigma;
          k.kernels[i + 1].push_back(g * along * along);
        }
      }
    }
  }
  for (auto& kernel : k.kernels) {
    double sum = 0.0;
    for (double w : kernel) sum += w;
    for (double& w : kernel) w /= sum;
  }
  return k;
}

std::vector<std::vector<double>> cca_filter_responses(std::span<const float> volume, std::array<int64_t, 3> dims,
                                                      const CcaKernels& kernels) {
  const int64_t nx = dims[0], ny = dims[1], nz = dims[2];
  const int64_t rx = kernels.radius[0], ry = kernels.radius[1], rz = kernels.radius[2];
  std::vector<std::vector<double>> out(kernels.kernels.size(), std::vector<double>(volume.size(), 0.0));
  for (int64_t z = 0; z < nz; ++z) {
    for (int64_t y = 0; y < ny; ++y) {
      for (int64_t x = 0; x < nx; ++x) {
        const auto v = static_cast<size_t>((z * ny + y) * nx + x);
        size_t tap = 0;
        for (int64_t dz = -rz; dz <= rz; ++dz) {
          for (int64_t dy = -ry; dy <= ry; ++dy) {
            for (int64_t dx = -rx; dx <= rx; ++dx, ++tap) {
              const int64_t xx = x + dx, yy = y + dy, zz = z + dz;
              if (xx < 0 || yy < 0 || zz < 0 || xx >= nx || yy >= ny || zz >= nz) continue;
              const double sample = volume[static_cast<size_t>((zz * ny + yy) * nx + xx)];
              for (size_t f = 0; f < out.size(); ++f) out[f][v] += kernels.kernels[f][tap] * sample;
            }
          }
        }
      }
    }
  }
  return out;
}

CcaSolution canonical_correlation(const Eigen::MatrixXd& y, const Eigen::MatrixXd& x, bool restricted) {
  const Eigen::Index n = y.rows(), s = y.cols(), t = x.cols();
  if (x.rows() != n) throw std::invalid_argument("canonical_correlation: row counts differ");
  const Eigen::MatrixXd yc = y.rowwise() - y.colwise().mean();
  const Eigen::MatrixXd xc = x.rowwise() - x.colwise().mean();
  const Eigen::MatrixXd syy = yc.transpose() * yc, sxx = xc.transpose() * xc, syx = yc.transpose() * xc;
  CcaSolution best;
  best.spatial = Eigen::VectorXd::Zero(s);
  best.temporal = Eigen::VectorXd::Zero(t);
  for (Eigen::Index i = 0; i < s; ++i) {
    const double mean = y.col(i).mean(), var = syy(i, i) / static_cast<double>(n);
    if (!(var > 1e-12 * (mean * mean + var))) return best;  // a response with no variance: rho 0
  }
  const Eigen::MatrixXd sxx_inv = sxx.inverse();
  double best_lambda = 0.0;
  for (unsigned mask = restricted ? 1u : (1u << s) - 1; mask < (1u << s); ++mask) {
    std::vector<Eigen::Index> in;
    for (Eigen::Index i = 0; i < s; ++i) {
      if (mask & (1u << i)) in.push_back(i);
    }
    const auto k = static_cast<Eigen::Index>(in.size());
    Eigen::MatrixXd b(k, k), syx_p(k, t);
    for (Eigen::Index i = 0; i < k; ++i) {
      syx_p.row(i) = syx.row(in[static_cast<size_t>(i)]);
      for (Eigen::Index j = 0; j < k; ++j) b(i, j) = syy(in[static_cast<size_t>(i)], in[static_cast<size_t>(j)]);
    }
    // Skip (near-)collinear responses: the correlation matrix's Cholesky pivots, in filter order.
    const Eigen::VectorXd scale = b.diagonal().cwiseSqrt().cwiseInverse();
    const Eigen::LLT<Eigen::MatrixXd> chol(scale.asDiagonal() * b * scale.asDiagonal());
    if (chol.info() != Eigen::Success ||
        chol.matrixL().toDenseMatrix().diagonal().array().square().minCoeff() <= 1e-5) {
      continue;
    }
    // max_a (a' Syx Sxx^-1 Sxy a) / (a' Syy a): the largest generalized eigenvalue is rho^2.
    const Eigen::MatrixXd a = syx_p * sxx_inv * syx_p.transpose();
    const Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> eig(a, b);
    const double lambda = eig.eigenvalues()(k - 1);
    Eigen::VectorXd w = eig.eigenvectors().col(k - 1);
    if (restricted) {
      const bool positive = (w.array() > 0.0).all(), negative = (w.array() < 0.0).all();
      if (!positive && !negative) continue;
      if (negative) w = -w;
    }
    if (lambda > best_lambda) {
      best_lambda = lambda;
      best.spatial.setZero();
      for (Eigen::Index i = 0; i < k; ++i) best.spatial(in[static_cast<size_t>(i)]) = w(i);
      best.temporal = sxx_inv * syx_p.transpose() * w;  // regression of the spatial variate on the basis
    }
  }
  best.rho = std::sqrt(std::min(std::max(best_lambda, 0.0), 1.0));
  return best;
}

std::vector<double> cca_map(const std::vector<std::span<const float>>& volumes, const Eigen::MatrixXd& x,
                            std::array<int64_t, 3> dims, std::array<double, 3> voxel_mm, const CcaReferenceSpec& spec,
                            bool signed_map) {
  if (static_cast<Eigen::Index>(volumes.size()) != x.rows()) throw std::invalid_argument("cca_map: rows differ");
  const CcaKernels kernels = cca_kernels(voxel_mm, spec);
  std::vector<std::vector<std::vector<double>>> responses;  // [volume][filter][voxel]
  responses.reserve(volumes.size());
  for (const auto& v : volumes) responses.push_back(cca_filter_responses(v, dims, kernels));
  const size_t nvox = volumes.front().size(), filters = kernels.kernels.size();
  std::vector<double> map(nvox);
  Eigen::MatrixXd y(x.rows(), static_cast<Eigen::Index>(filters));
  for (size_t v = 0; v < nvox; ++v) {
    for (size_t j = 0; j < volumes.size(); ++j) {
      for (size_t f = 0; f < filters; ++f)
        y(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(f)) = responses[j][f][v];
    }
    const CcaSolution s = canonical_correlation(y, x, true);
    map[v] = (signed_map && s.temporal.size() > 0 && s.temporal(0) < 0.0) ? -s.rho : s.rho;
  }
  return map;
}

}  // namespace rtf::reference
