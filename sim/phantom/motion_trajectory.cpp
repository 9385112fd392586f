// Motion trajectories: generated (drift, jitter, steps, spikes; bounded, volume 0 at rest).
#include "sim/phantom/motion_trajectory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "sim/phantom/random.hpp"

namespace rtf::sim {
namespace {

// Parameter order here: tx ty tz (mm) rx ry rz (deg). Relative sizes of real head motion: most in z and y
// translation and in pitch (rx, nodding), least in x translation and in yaw/roll.
constexpr std::array<double, 6> kAxisWeight{0.4, 0.7, 1.0, 1.0, 0.45, 0.45};

using Trajectory = std::vector<std::array<double, 6>>;

// A smooth curve on tau in [0, 1], zero at 0, max |value| 1: a linear trend plus three slow cosines.
std::vector<double> slow_curve(int64_t n, Rng& rng) {
  const double slope = rng.uniform(-1.0, 1.0);
  std::array<double, 3> a{}, phase{};
  for (int k = 0; k < 3; ++k) {
    a[k] = 0.6 * rng.normal() / (k + 1);
    phase[k] = rng.uniform(0.0, 2.0 * std::numbers::pi);
  }
  std::vector<double> v(static_cast<size_t>(n));
  double peak = 0.0;
  for (int64_t t = 0; t < n; ++t) {
    const double tau = n > 1 ? static_cast<double>(t) / static_cast<double>(n - 1) : 0.0;
    double s = slope * tau;
    for (int k = 0; k < 3; ++k)
      s += a[k] * (std::cos(std::numbers::pi * (k + 1) * tau + phase[k]) - std::cos(phase[k]));
    v[static_cast<size_t>(t)] = s;
    peak = std::max(peak, std::abs(s));
  }
  if (peak > 0.0) {
    for (double& x : v) x /= peak;
  }
  return v;
}

void add_drift(Trajectory& traj, Rng& rng, double low, double high) {
  const auto n = static_cast<int64_t>(traj.size());
  for (int p = 0; p < 6; ++p) {
    const auto curve = slow_curve(n, rng);
    const double amplitude = rng.uniform(low, high) * kAxisWeight[p];
    for (int64_t t = 0; t < n; ++t) traj[static_cast<size_t>(t)][p] += amplitude * curve[static_cast<size_t>(t)];
  }
}

// Small, slightly smooth jitter (AR(1), coefficient 0.5), a few percent of the bound.
void add_jitter(Trajectory& traj, Rng& rng) {
  for (int p = 0; p < 6; ++p) {
    double state = 0.0;
    for (auto& row : traj) {
      state = 0.5 * state + 0.02 * kAxisWeight[p] * rng.normal();
      row[p] += state;
    }
  }
}

// Abrupt movements, about one per 100 s (at least 2): a step (the head settles elsewhere) or a spike lasting
// 1-3 volumes that returns to within 20% of where it was.
void add_abrupt(Trajectory& traj, Rng& rng, double tr_s) {
  const auto n = static_cast<int64_t>(traj.size());
  if (n < 4) return;
  const auto events = std::max<int64_t>(2, std::llround(static_cast<double>(n) * tr_s / 100.0));
  const int64_t first = std::max<int64_t>(1, n / 20);
  for (int64_t e = 0; e < events; ++e) {
    const auto start = static_cast<int64_t>(rng.uniform(static_cast<double>(first), static_cast<double>(n - 1)));
    const bool step = rng.uniform() < 0.5;
    const auto length = static_cast<int64_t>(1 + std::floor(rng.uniform(0.0, 3.0)));
    std::array<double, 6> jump{};
    for (int p = 0; p < 6; ++p) jump[p] = 0.45 * kAxisWeight[p] * rng.normal();
    for (int64_t t = start; t < n; ++t) {
      const double scale = step || t < start + length ? 1.0 : 0.2;
      for (int p = 0; p < 6; ++p) traj[static_cast<size_t>(t)][p] += scale * jump[p];
    }
  }
}

// Volume 0 at rest; translations and rotations scaled (each group as a whole) so that no |value| exceeds its
// bound, which keeps the trajectory's shape.
std::vector<RigidParams> finish(Trajectory traj, double max_translation_mm, double max_rotation_deg) {
  const auto first = traj.front();
  for (auto& row : traj) {
    for (int p = 0; p < 6; ++p) row[p] -= first[p];
  }
  double peak_t = 0.0, peak_r = 0.0;
  for (const auto& row : traj) {
    for (int p = 0; p < 3; ++p) peak_t = std::max(peak_t, std::abs(row[p]));
    for (int p = 3; p < 6; ++p) peak_r = std::max(peak_r, std::abs(row[p]));
  }
  // Generated curves are in units of the bound; rescale only when they exceed it.
  const double st = peak_t > 1.0 ? max_translation_mm / peak_t : max_translation_mm;
  const double sr = peak_r > 1.0 ? max_rotation_deg / peak_r : max_rotation_deg;
  std::vector<RigidParams> out(traj.size());
  for (size_t t = 0; t < traj.size(); ++t) {
    for (int p = 0; p < 3; ++p) {
      out[t].translation_mm[static_cast<size_t>(p)] = traj[t][p] * st;
      out[t].rotation_deg[static_cast<size_t>(p)] = traj[t][p + 3] * sr;
    }
  }
  return out;
}

}  // namespace

std::vector<RigidParams> make_motion(MotionKind kind, int64_t volumes, double tr_s, double max_translation_mm,
                                     double max_rotation_deg, uint64_t seed) {
  if (volumes < 1) return {};
  Trajectory traj(static_cast<size_t>(volumes), std::array<double, 6>{});
  if (kind == MotionKind::kNone) return finish(std::move(traj), 0.0, 0.0);
  Rng rng(seed, kStreamMotion);
  if (kind == MotionKind::kDrift) {
    add_drift(traj, rng, 0.5, 1.0);
  } else {
    add_drift(traj, rng, 0.25, 0.5);
    add_jitter(traj, rng);
    add_abrupt(traj, rng, tr_s);
  }
  return finish(std::move(traj), max_translation_mm, max_rotation_deg);
}

}  // namespace rtf::sim
