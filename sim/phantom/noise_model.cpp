// Noise budget, physiological rhythms, per-voxel noise fields and drift shape of the phantom.
#include "sim/phantom/noise_model.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace rtf::sim {

NoiseLevels noise_levels(const PhantomSpec& spec) {
  NoiseLevels n;
  n.drift_fraction = spec.drift_percent / 100.0;
  if (spec.tsnr <= 0.0) return n;  // noise off
  const double gm = spec.baseline[kGm];
  n.thermal_sd = std::sqrt(1.0 - spec.physio_share) * gm / spec.tsnr;
  const double w_gm = spec.physio_weight[kGm];
  if (w_gm > 0.0) n.physio_amplitude = std::sqrt(spec.physio_share) / (spec.tsnr * w_gm);
  return n;
}

NoiseLevels calibrate_noise(NoiseLevels levels, const std::vector<float>& baseline,
                            const std::vector<float>& physio_weight, double tsnr) {
  if (!(tsnr > 0.0) || levels.thermal_sd <= 0.0 || baseline.empty()) return levels;
  std::vector<double> predicted(baseline.size());
  for (size_t i = 0; i < baseline.size(); ++i) {
    const double physio = levels.physio_amplitude * physio_weight[i];
    predicted[i] = baseline[i] / std::sqrt(levels.thermal_sd * levels.thermal_sd + physio * physio);
  }
  const auto mid = predicted.begin() + static_cast<std::ptrdiff_t>(predicted.size() / 2);
  std::nth_element(predicted.begin(), mid, predicted.end());
  const double factor = *mid / tsnr;
  levels.thermal_sd *= factor;
  levels.physio_amplitude *= factor;
  levels.calibration *= factor;
  return levels;
}

PhysioRhythm::PhysioRhythm(double rate_hz, double variation, Rng& rng)
    : rate_hz_(rate_hz), variation_(variation), phase0_(rng.uniform(0.0, 2.0 * std::numbers::pi)) {
  for (int k = 0; k < 3; ++k) {
    amp_[k] = 1.0 / 3.0;
    omega_[k] = 2.0 * std::numbers::pi / rng.uniform(20.0, 120.0);
    chi_[k] = rng.uniform(0.0, 2.0 * std::numbers::pi);
  }
}

double PhysioRhythm::phase(double t) const {
  double wander = 0.0;  // integral of m(t) from 0 to t
  for (int k = 0; k < 3; ++k) wander += amp_[k] * (std::sin(omega_[k] * t + chi_[k]) - std::sin(chi_[k])) / omega_[k];
  return phase0_ + 2.0 * std::numbers::pi * rate_hz_ * (t + variation_ * wander);
}

VoxelFields make_voxel_fields(const EpiGrid& grid, uint64_t seed) {
  const auto n = static_cast<size_t>(grid.voxels());
  VoxelFields f;
  f.cardiac_cos.resize(n);
  f.cardiac_sin.resize(n);
  f.respiratory_cos.resize(n);
  f.respiratory_sin.resize(n);
  f.drift_gain.resize(n);
  Rng rng(seed, kStreamVoxelFields);
  Eigen::Vector3d u(rng.normal(), rng.normal(), rng.normal());
  u = u.norm() > 0.0 ? Eigen::Vector3d(u / u.norm()) : Eigen::Vector3d::UnitZ();
  double half_diagonal = 0.0;
  for (int a = 0; a < 3; ++a) {
    const double half = 0.5 * static_cast<double>(grid.dims[a]) * grid.voxel_mm[a];
    half_diagonal += half * half;
  }
  half_diagonal = std::sqrt(half_diagonal);
  size_t i = 0;
  for (int64_t z = 0; z < grid.dims[2]; ++z) {
    for (int64_t y = 0; y < grid.dims[1]; ++y) {
      for (int64_t x = 0; x < grid.dims[0]; ++x, ++i) {
        const double theta = rng.uniform(0.0, 2.0 * std::numbers::pi);
        const double psi = rng.uniform(0.0, 2.0 * std::numbers::pi);
        f.cardiac_cos[i] = static_cast<float>(std::cos(theta));
        f.cardiac_sin[i] = static_cast<float>(std::sin(theta));
        f.respiratory_cos[i] = static_cast<float>(std::cos(psi));
        f.respiratory_sin[i] = static_cast<float>(std::sin(psi));
        const Eigen::Vector3d w =
            (grid.affine * Eigen::Vector4d(static_cast<double>(x), static_cast<double>(y), static_cast<double>(z), 1.0))
                .head<3>();
        f.drift_gain[i] = static_cast<float>(1.0 + 0.3 * u.dot(w - grid.centre_mm) / half_diagonal);
      }
    }
  }
  return f;
}

double drift_shape(double t_s, double run_s) {
  const double tau = run_s > 0.0 ? t_s / run_s : 0.0;
  auto raw = [](double x) { return 0.5 * x + 0.25 * (1.0 - std::cos(2.0 * std::numbers::pi * x)); };
  // The maximum on [0, 1], where sin(2 pi tau) = -1 / pi.
  static const double kPeak = raw(0.5 + std::asin(1.0 / std::numbers::pi) / (2.0 * std::numbers::pi));
  return raw(tau) / kPeak;
}

}  // namespace rtf::sim
