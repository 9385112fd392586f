// `rtfmri sim phantom`'s work (sim/phantom/phantom_command.hpp).
#include "sim/phantom/phantom_command.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/io/data_lookup.hpp"
#include "core/motion/motion_files.hpp"
#include "core/util/stopwatch.hpp"
#include "sim/phantom/activation.hpp"
#include "sim/phantom/design.hpp"
#include "sim/phantom/motion_trajectory.hpp"
#include "sim/phantom/phantom.hpp"
#include "sim/phantom/phantom_writer.hpp"

namespace rtf::sim {
namespace {

// "64x64x33" / "3" / "3x3x3.5" / "1,2,3": `count` numbers separated by x or commas; one number repeats.
std::vector<double> parse_numbers(const std::string& text, const char* option, size_t count) {
  std::vector<double> v;
  std::string field;
  auto flush = [&] {
    size_t used = 0;
    double x = 0.0;
    try {
      x = std::stod(field, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (field.empty() || used != field.size()) {
      throw std::invalid_argument(fmt::format("{} '{}': '{}' is not a number", option, text, field));
    }
    v.push_back(x);
    field.clear();
  };
  for (char c : text) {
    if (c == 'x' || c == 'X' || c == ',') {
      flush();
    } else {
      field.push_back(c);
    }
  }
  flush();
  if (v.size() == 1 && count == 3) v.assign(3, v[0]);
  if (v.size() != count) {
    throw std::invalid_argument(fmt::format("{} '{}': expected {} numbers", option, text, count));
  }
  return v;
}

// The grid, voxel size, centre and baselines from their text.
void set_geometry(const PhantomCommandOptions& c, PhantomSpec& s) {
  const auto g = parse_numbers(c.grid, "--grid", 3);
  for (int a = 0; a < 3; ++a) {
    if (g[static_cast<size_t>(a)] != static_cast<double>(static_cast<int64_t>(g[static_cast<size_t>(a)]))) {
      throw std::invalid_argument(fmt::format("--grid '{}': sizes must be whole numbers", c.grid));
    }
    s.grid[static_cast<size_t>(a)] = static_cast<int64_t>(g[static_cast<size_t>(a)]);
  }
  const auto vox = parse_numbers(c.voxel, "--voxel", 3);
  s.voxel_mm = {vox[0], vox[1], vox[2]};
  if (!c.centre.empty()) {
    const auto ce = parse_numbers(c.centre, "--centre", 3);
    s.centre_mm = std::array<double, 3>{ce[0], ce[1], ce[2]};
  }
  if (!c.baseline.empty()) {
    const auto b = parse_numbers(c.baseline, "--baseline", 3);
    s.baseline = {b[0], b[1], b[2]};
  }
}

PhantomSpec complete_spec(const PhantomCommandOptions& c) {
  PhantomSpec s = c.spec;
  set_geometry(c, s);
  s.motion = parse_motion_kind(c.motion);
  if (!c.motion_file.empty()) s.motion_override = read_motion_file(c.motion_file);
  for (const auto& r : c.regions) s.regions.push_back(parse_region(r));
  if (!c.events_file.empty()) {
    s.design = "events";
    s.events = read_events_tsv(c.events_file);
  } else if (s.design == "events") {
    throw std::invalid_argument("--design events needs --events FILE.tsv");
  }
  s.noise = c.noise == "gaussian" ? NoiseDistribution::kGaussian : NoiseDistribution::kRician;
  s.datatype = c.datatype == "float32" ? DataType::kFloat32 : DataType::kInt16;
  if (c.no_noise) {
    s.tsnr = 0.0;
    s.drift_percent = 0.0;
  }
  s.template_path = c.template_path.empty() ? find_installed_data(kDefaultTemplate, executable_dir())
                                            : std::filesystem::path(c.template_path);
  return s;
}

void print_summary(const PhantomSpec& s, const PhantomResult& r, const WriteReport& w, const std::string& out,
                   double seconds) {
  int64_t active = 0;
  for (float v : r.activation_mask.data()) active += v > 0.0f;
  double max_t = 0.0, max_r = 0.0;
  for (const auto& p : r.motion) {
    for (int a = 0; a < 3; ++a) {
      max_t = std::max(max_t, std::abs(p.translation_mm[static_cast<size_t>(a)]));
      max_r = std::max(max_r, std::abs(p.rotation_deg[static_cast<size_t>(a)]));
    }
  }
  const std::string tsnr = r.spec.tsnr > 0.0
                               ? fmt::format("GM tSNR {:.1f} (target {:g})", r.tsnr_gm.median, r.spec.tsnr)
                               : std::string("no noise");
  fmt::print(
      "phantom: {}x{}x{}x{} at {:g}x{:g}x{:g} mm, TR {:g} s; motion {} (max {:.2f} mm, {:.2f} deg); {} region(s), "
      "{} active voxels; {} -> {} ({:.2f} s: synthesis {:.2f} s on {} threads, writing {:.2f} s)\n",
      s.grid[0], s.grid[1], s.grid[2], s.volumes, s.voxel_mm[0], s.voxel_mm[1], s.voxel_mm[2], s.tr_s,
      s.motion_override.empty() ? to_string(s.motion) : "from file", max_t, max_r, r.regions.size(), active, tsnr, out,
      seconds, r.seconds_synthesis, r.threads, w.seconds);
}

}  // namespace

void run_phantom_command(const PhantomCommandOptions& c) {
  Stopwatch clock;
  const PhantomSpec s = complete_spec(c);
  const PhantomResult r = make_phantom(s);
  const WriteReport w = write_phantom(r, c.out);
  if (w.clipped > 0) {
    spdlog::warn("{} voxel values fell outside int16 and were clamped; lower --baseline or use --datatype float32",
                 w.clipped);
  }
  print_summary(s, r, w, c.out, clock.seconds());
}

}  // namespace rtf::sim
