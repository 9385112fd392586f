// `rtfmri sim phantom --out DIR [...]`: synthetic BOLD from the Colin27 template with known motion, activation and
// noise, and its ground truth (docs/algorithms/phantom.md).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <stdexcept>

#include "cli/cli_support.hpp"
#include "cli/command_registry.hpp"
#include "cli/option_checks.hpp"
#include "core/io/data_lookup.hpp"
#include "sim/phantom/activation.hpp"
#include "sim/phantom/design.hpp"
#include "sim/phantom/motion_trajectory.hpp"
#include "sim/phantom/phantom.hpp"
#include "sim/phantom/phantom_writer.hpp"

namespace {

struct PhantomCli {
  std::string out, template_path, grid = "64x64x33", voxel = "3", centre, baseline, motion = "realistic";
  std::string motion_file, events_file, noise = "rician", datatype = "int16";
  std::vector<std::string> regions;
  bool no_noise = false;
  rtf::sim::PhantomSpec spec;
};

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

void run(PhantomCli& c) {
  rtf::cli::Stopwatch clock;
  auto& s = c.spec;
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
  s.motion = rtf::sim::parse_motion_kind(c.motion);
  if (!c.motion_file.empty()) s.motion_override = rtf::sim::read_motion_file(c.motion_file);
  for (const auto& r : c.regions) s.regions.push_back(rtf::sim::parse_region(r));
  if (!c.events_file.empty()) {
    s.design = "events";
    s.events = rtf::sim::read_events_tsv(c.events_file);
  } else if (s.design == "events") {
    throw std::invalid_argument("--design events needs --events FILE.tsv");
  }
  s.noise = c.noise == "gaussian" ? rtf::sim::NoiseDistribution::kGaussian : rtf::sim::NoiseDistribution::kRician;
  s.datatype = c.datatype == "float32" ? rtf::DataType::kFloat32 : rtf::DataType::kInt16;
  if (c.no_noise) {
    s.tsnr = 0.0;
    s.drift_percent = 0.0;
  }
  s.template_path = c.template_path.empty() ? rtf::find_installed_data(rtf::kDefaultTemplate, rtf::executable_dir())
                                            : std::filesystem::path(c.template_path);

  const rtf::sim::PhantomResult r = rtf::sim::make_phantom(s);
  const rtf::sim::WriteReport w = rtf::sim::write_phantom(r, c.out);
  if (w.clipped > 0) {
    spdlog::warn("{} voxel values fell outside int16 and were clamped; lower --baseline or use --datatype float32",
                 w.clipped);
  }
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
      s.motion_override.empty() ? rtf::sim::to_string(s.motion) : "from file", max_t, max_r, r.regions.size(), active,
      tsnr, c.out, clock.seconds(), r.seconds_synthesis, r.threads, w.seconds);
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& /*globals*/) {
  auto c = std::make_shared<PhantomCli>();
  auto& s = c->spec;
  auto* cmd = rtf::cli::sim_group(app).add_subcommand(
      "phantom", "Synthetic BOLD from the Colin27 template with known motion, activation and noise, plus ground truth");
  cmd->add_option("--out", c->out, "Output directory")->required();
  cmd->add_option(
         "--template", c->template_path,
         "Brain-extracted T1 template (default: mricron/ch2bet.nii.gz in $RTFMRI_DATA_DIR or the build's data)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--grid", c->grid, "EPI matrix NXxNYxNZ")->capture_default_str();
  cmd->add_option("--voxel", c->voxel, "Voxel size in mm: one number, or AxBxC")->capture_default_str();
  cmd->add_option("--centre", c->centre, "World mm (x,y,z) of the grid centre (default: on the brain)");
  cmd->add_option("--volumes", s.volumes, "Number of volumes")->capture_default_str()->check(rtf::cli::positive());
  cmd->add_option("--tr", s.tr_s, "Repetition time in seconds")->capture_default_str()->check(rtf::cli::positive());
  cmd->add_option("--slice-order", s.slice_order,
                  "none (every slice at t*TR) or ascending|descending|interleaved|interleaved-siemens")
      ->capture_default_str();
  cmd->add_option("--supersample", s.supersample, "Sub-samples per axis per voxel (partial volume)")
      ->capture_default_str()
      ->check(CLI::Range(1, 8));
  cmd->add_option("--baseline", c->baseline, "EPI baselines of pure CSF,GM,WM in output units [15000,10000,7500]");
  cmd->add_option("--motion", c->motion, "Head motion")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "drift", "realistic"}));
  cmd->add_option("--max-translation", s.max_translation_mm, "Bound on |translation| per axis, mm")
      ->capture_default_str()
      ->check(rtf::cli::non_negative());
  cmd->add_option("--max-rotation", s.max_rotation_deg, "Bound on |rotation| per axis, degrees")
      ->capture_default_str()
      ->check(rtf::cli::non_negative());
  cmd->add_option("--motion-file", c->motion_file,
                  "Use this trajectory: a motion.tsv like the phantom writes, or an FSL .par (one row per volume)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--region", c->regions,
                  "Activation sphere x,y,z,radius[,trial_type[,psc]] in template mm (repeatable; default: bilateral "
                  "M1 and V1). Negative first value: --region=-38,-24,56,8")
      ->allow_extra_args(false);
  cmd->add_option("--design", s.design, "block or events (--events implies events)")
      ->capture_default_str()
      ->check(CLI::IsMember({"block", "events"}));
  cmd->add_option("--block-on", s.block_on_s, "Block design: seconds on")
      ->capture_default_str()
      ->check(rtf::cli::positive());
  cmd->add_option("--block-off", s.block_off_s, "Block design: seconds off (the run starts with rest)")
      ->capture_default_str()
      ->check(rtf::cli::non_negative());
  cmd->add_option("--events", c->events_file, "BIDS events.tsv (onset, duration[, trial_type])")
      ->check(CLI::ExistingFile);
  cmd->add_option("--psc", s.psc, "Peak percent signal change of pure grey matter")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--mask-threshold", s.activation_mask_threshold,
                  "activation_mask: voxels whose activated grey-matter fraction is at least this")
      ->capture_default_str()
      ->check(CLI::Range(1e-6, 1.0));
  cmd->add_option("--microtime", s.microtime, "Regressor time bins per TR")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option(
         "--tsnr", s.tsnr,
         "Grey-matter temporal SNR: median over voxels with GM fraction >= 0.5 of mean / noise sd (0: no thermal "
         "or physiological noise)")
      ->capture_default_str()
      ->check(rtf::cli::non_negative());
  cmd->add_option("--physio-share", s.physio_share, "Share of the GM noise variance that is physiological")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.99));
  cmd->add_option("--cardiac-hz", s.cardiac_hz, "Mean heart rate")->capture_default_str()->check(rtf::cli::positive());
  cmd->add_option("--respiratory-hz", s.respiratory_hz, "Mean breathing rate")
      ->capture_default_str()
      ->check(rtf::cli::positive());
  cmd->add_option("--drift", s.drift_percent, "Peak slow drift in percent of the signal (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 50.0));
  cmd->add_option("--noise", c->noise, "Thermal noise: rician (magnitude image) or gaussian")
      ->capture_default_str()
      ->check(CLI::IsMember({"rician", "gaussian"}));
  cmd->add_flag("--no-noise", c->no_noise, "No thermal, physiological or drift component (same as --tsnr 0 --drift 0)");
  cmd->add_option("--seed", s.seed, "Random seed (same seed, same output)")->capture_default_str();
  cmd->add_option("--datatype", c->datatype, "bold.nii.gz voxel type")
      ->capture_default_str()
      ->check(CLI::IsMember({"int16", "float32"}));
  cmd->add_option("--threads", s.threads, "Worker threads (0: all cores)")
      ->capture_default_str()
      ->check(rtf::cli::non_negative());
  cmd->callback([c] { run(*c); });
}

RTF_REGISTER_COMMAND(82, setup);

}  // namespace
