// The synthetic first-level case shared by bench_glm_permutation and bench_glm_permutation_fwe: an ellipsoidal "brain"
// (semi-axes half the grid) on a grid of 3 mm voxels at TR 2 s, AR(4) noise of marginal sd 10 around a baseline of
// 1000, and a 20 s on / 20 s off block design of "task" with SPM's cosine drift (128 s) and the constant.
#pragma once

#include <Eigen/Dense>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/design/design_matrix.hpp"
#include "core/glm/glm_model.hpp"
#include "core/image/image.hpp"

namespace rtf::bench {

constexpr double kFirstLevelTr = 2.0;
constexpr double kFirstLevelVoxelMm = 3.0;
constexpr std::array<double, 4> kFirstLevelRho{0.3, 0.1, 0.05, 0.02};
constexpr double kFirstLevelNoiseSd = 10.0;
constexpr float kFirstLevelBaseline = 1000.0f;

// The innovation sd that gives the AR process of kFirstLevelRho a marginal sd of kFirstLevelNoiseSd: the
// autocorrelations r_1..r_P solve r_k = sum_j rho_j r_|k-j| (r_0 = 1), and var = sigma^2 / (1 - sum_k rho_k r_k).
inline double innovation_sd() {
  const auto& rho = kFirstLevelRho;
  const int p = static_cast<int>(rho.size());
  Eigen::MatrixXd a = Eigen::MatrixXd::Identity(p, p);
  Eigen::VectorXd b = Eigen::VectorXd::Zero(p);
  for (int k = 1; k <= p; ++k) {
    for (int j = 1; j <= p; ++j) {
      const int lag = std::abs(k - j);
      if (lag == 0) {
        b[k - 1] += rho[static_cast<size_t>(j - 1)];
      } else {
        a(k - 1, lag - 1) -= rho[static_cast<size_t>(j - 1)];
      }
    }
  }
  const Eigen::VectorXd r = a.partialPivLu().solve(b);
  double s = 0.0;
  for (int k = 0; k < p; ++k) s += rho[static_cast<size_t>(k)] * r[k];
  return kFirstLevelNoiseSd * std::sqrt(1.0 - s);
}

struct FirstLevelGrid {
  ImageHeader header;         // dims, 3 mm voxels, TR 2 s, `volumes` volumes
  std::vector<uint8_t> mask;  // the ellipsoid
  size_t mask_voxels = 0;
};

inline FirstLevelGrid first_level_grid(std::array<int64_t, 3> dims, int64_t volumes) {
  FirstLevelGrid g;
  ImageHeader& h = g.header;
  h.dims = dims;
  h.num_volumes = volumes;
  h.voxel_mm = {kFirstLevelVoxelMm, kFirstLevelVoxelMm, kFirstLevelVoxelMm};
  h.affine = Eigen::Matrix4d::Identity();
  for (int i = 0; i < 3; ++i) h.affine(i, i) = kFirstLevelVoxelMm;
  h.tr_s = kFirstLevelTr;
  g.mask.assign(static_cast<size_t>(h.voxels_per_volume()), 0);
  for (int64_t z = 0; z < dims[2]; ++z) {
    for (int64_t y = 0; y < dims[1]; ++y) {
      for (int64_t x = 0; x < dims[0]; ++x) {
        const std::array<int64_t, 3> p{x, y, z};
        double r2 = 0.0;
        for (size_t i = 0; i < 3; ++i) {
          const double half = 0.5 * static_cast<double>(dims[i]);
          const double d = (static_cast<double>(p[i]) + 0.5 - half) / half;
          r2 += d * d;
        }
        if (r2 <= 1.0) {
          g.mask[static_cast<size_t>((z * dims[1] + y) * dims[0] + x)] = 1;
          ++g.mask_voxels;
        }
      }
    }
  }
  return g;
}

struct FirstLevelDesign {
  DesignMatrix design;
  std::vector<GlmContrast> contrasts;  // "task"
};

inline FirstLevelDesign first_level_design(int64_t volumes) {
  std::vector<Event> events;
  for (double onset = 0.0; onset < kFirstLevelTr * static_cast<double>(volumes); onset += 40.0) {
    events.push_back({onset, 20.0, "task", std::nullopt});
  }
  DesignOptions options;
  options.tr_s = kFirstLevelTr;
  options.n_scans = volumes;
  options.drift = DriftModel::kCosine;
  options.highpass_cutoff_s = 128.0;
  FirstLevelDesign d{build_design_matrix(events, options), {}};
  Eigen::MatrixXd weights = Eigen::MatrixXd::Zero(1, d.design.x.cols());
  weights(0, *d.design.find("task")) = 1.0;
  d.contrasts.push_back({"task", weights});
  return d;
}

}  // namespace rtf::bench
