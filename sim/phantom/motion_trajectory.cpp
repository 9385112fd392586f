// Motion trajectories: generated (drift, jitter, steps, spikes; bounded, volume 0 at rest) or read from a file.
#include "sim/phantom/motion_trajectory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <numbers>
#include <sstream>
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

bool parse_number(const std::string& s, double& v) {
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  return ec == std::errc() && ptr == end && std::isfinite(v);
}

std::vector<std::string> split(const std::string& line, bool tabs_only) {
  std::vector<std::string> out;
  std::string field;
  for (char ch : line) {
    const bool sep = tabs_only ? ch == '\t' : (ch == ' ' || ch == '\t');
    if (sep) {
      if (tabs_only || !field.empty()) out.push_back(field);
      field.clear();
    } else if (ch != '\r') {
      field.push_back(ch);
    }
  }
  if (tabs_only || !field.empty()) out.push_back(field);
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

std::vector<RigidParams> parse_motion_tsv(std::string_view text, const std::string& name) {
  static const std::array<std::string, 6> kColumns{"trans_x_mm", "trans_y_mm", "trans_z_mm",
                                                   "rot_x_deg",  "rot_y_deg",  "rot_z_deg"};
  std::istringstream in{std::string(text)};
  std::string line;
  std::array<int, 6> col{-1, -1, -1, -1, -1, -1};
  bool have_header = false;
  int line_no = 0;
  std::vector<RigidParams> out;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto fields = split(line, true);
    if (!have_header) {
      for (size_t i = 0; i < fields.size(); ++i) {
        for (size_t c = 0; c < kColumns.size(); ++c) {
          if (fields[i] == kColumns[c]) col[c] = static_cast<int>(i);
        }
      }
      for (size_t c = 0; c < kColumns.size(); ++c) {
        if (col[c] < 0) {
          throw std::invalid_argument(fmt::format(
              "{}: line {}: the header has no column '{}' (expected trans_x_mm ... rot_z_deg, tab-separated)", name,
              line_no, kColumns[c]));
        }
      }
      have_header = true;
      continue;
    }
    std::array<double, 6> v{};
    for (size_t c = 0; c < 6; ++c) {
      const auto i = static_cast<size_t>(col[c]);
      if (i >= fields.size() || !parse_number(fields[i], v[c])) {
        throw std::invalid_argument(fmt::format("{}: line {}: no number in column '{}'", name, line_no, kColumns[c]));
      }
    }
    RigidParams p;
    p.translation_mm = {v[0], v[1], v[2]};
    p.rotation_deg = {v[3], v[4], v[5]};
    out.push_back(p);
  }
  if (!have_header) throw std::invalid_argument(fmt::format("{}: empty motion file", name));
  return out;
}

std::vector<RigidParams> parse_fsl_par(std::string_view text, const std::string& name) {
  std::istringstream in{std::string(text)};
  std::string line;
  int line_no = 0;
  std::vector<RigidParams> out;
  while (std::getline(in, line)) {
    ++line_no;
    const auto fields = split(line, false);
    if (fields.empty()) continue;
    std::array<double, 6> v{};
    if (fields.size() != 6) {
      throw std::invalid_argument(
          fmt::format("{}: line {}: {} numbers, expected 6 (rx ry rz tx ty tz)", name, line_no, fields.size()));
    }
    for (size_t c = 0; c < 6; ++c) {
      if (!parse_number(fields[c], v[c])) {
        throw std::invalid_argument(fmt::format("{}: line {}: '{}' is not a number", name, line_no, fields[c]));
      }
    }
    out.push_back(from_fsl_par(v));
  }
  if (out.empty()) throw std::invalid_argument(fmt::format("{}: no motion parameters", name));
  return out;
}

std::vector<RigidParams> read_motion_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(fmt::format("{}: cannot open the motion file", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  if (path.extension() == ".par") return parse_fsl_par(text.str(), path.string());
  return parse_motion_tsv(text.str(), path.string());
}

}  // namespace rtf::sim
