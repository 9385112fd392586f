// Writing a phantom: NIfTI images, ground-truth text files and phantom.json.
#include "sim/phantom/phantom_writer.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <system_error>

#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "sim/phantom/ground_truth_writers.hpp"

namespace rtf::sim {
namespace {

using Json = nlohmann::ordered_json;

Json summary_json(const TsnrSummary& s) {
  return Json{{"median", s.median}, {"mean", s.mean}, {"voxels", s.voxels}};
}

Json matrix_json(const Eigen::Matrix4d& m) {
  Json rows = Json::array();
  for (int r = 0; r < 4; ++r) rows.push_back({m(r, 0), m(r, 1), m(r, 2), m(r, 3)});
  return rows;
}

int64_t count_clipped(const Image& bold) {
  int64_t n = 0;
  for (float v : bold.data()) {
    if (std::lround(v) > std::numeric_limits<int16_t>::max() || std::lround(v) < std::numeric_limits<int16_t>::min())
      ++n;
  }
  return n;
}

}  // namespace

std::string phantom_json(const PhantomResult& r, int64_t clipped) {
  const PhantomSpec& s = r.spec;
  Json j;
  j["generator"] = "rtfmri sim phantom";
  j["documentation"] = "docs/algorithms/phantom.md";
  j["seed"] = s.seed;
  j["template"] = {{"path", s.template_path.string()},
                   {"kmeans_t1_centres_csf_gm_wm", r.tissue_centres},
                   {"brain_voxels_csf_gm_wm", r.template_counts}};
  j["grid"] = {{"dims", s.grid},
               {"voxel_mm", s.voxel_mm},
               {"orientation", "RAS (x right, y anterior, z superior), axial"},
               {"affine", matrix_json(r.grid.affine)},
               {"centre_mm", {r.grid.centre_mm.x(), r.grid.centre_mm.y(), r.grid.centre_mm.z()}},
               {"supersample", s.supersample}};
  j["timing"] = {{"volumes", s.volumes},
                 {"tr_s", s.tr_s},
                 {"slice_order", s.slice_order},
                 {"slice_times_s", r.slice_times_s},
                 {"volume_time", "volume t, slice z is acquired at t * TR + slice_times_s[z]"}};
  j["tissue"] = {{"baseline_csf_gm_wm", s.baseline},
                 {"labels", {{"0", "background"}, {"1", "CSF"}, {"2", "GM"}, {"3", "WM"}}},
                 {"brain_mask", "CSF + GM + WM fraction >= 0.5"}};

  Json motion;
  motion["kind"] = s.motion_override.empty() ? to_string(s.motion) : "file";
  motion["max_translation_mm"] = s.max_translation_mm;
  motion["max_rotation_deg"] = s.max_rotation_deg;
  motion["centre_mm"] = {r.grid.centre_mm.x(), r.grid.centre_mm.y(), r.grid.centre_mm.z()};
  motion["convention"] =
      "x' = R (x - c) + c + t, R = Rz(rot_z) Ry(rot_y) Rx(rot_x), world RAS mm, angles in degrees, right-handed "
      "(counter-clockwise looking down each positive axis), c = centre_mm";
  motion["direction"] =
      "M_t maps a point of the head at its volume-0 position to its position in volume t; volume t samples the "
      "template at M_t^-1 x. A registration that finds T with vol_t(T x) = vol_0(x) returns T = M_t.";
  std::array<double, 6> peak{};
  double fd_sum = 0.0, fd_max = 0.0;
  for (size_t t = 0; t < r.motion.size(); ++t) {
    for (size_t a = 0; a < 3; ++a) {
      peak[a] = std::max(peak[a], std::abs(r.motion[t].translation_mm[a]));
      peak[a + 3] = std::max(peak[a + 3], std::abs(r.motion[t].rotation_deg[a]));
    }
    if (t > 0) {
      const double fd = framewise_displacement(r.motion[t - 1], r.motion[t]);
      fd_sum += fd;
      fd_max = std::max(fd_max, fd);
    }
  }
  motion["max_abs_trans_xyz_mm_rot_xyz_deg"] = peak;
  motion["framewise_displacement_mm"] = {
      {"mean", r.motion.size() > 1 ? fd_sum / static_cast<double>(r.motion.size() - 1) : 0.0},
      {"max", fd_max},
      {"definition", "Power et al. 2012, rotations on a 50 mm sphere"}};
  j["motion"] = motion;

  Json act;
  act["design"] = s.design;
  if (s.design == "block") act["block_on_s"] = s.block_on_s, act["block_off_s"] = s.block_off_s;
  act["conditions"] = r.design.conditions();
  act["psc"] = s.psc;
  act["psc_meaning"] = "peak percent signal change of pure grey matter: each regressor is scaled to a maximum of 1";
  act["hrf"] = "SPM canonical (delays 6, 16 s; dispersions 1, 1; ratio 6; length 32 s), sum 1 at the microtime";
  act["microtime_s"] = r.design.microtime_s();
  Json regions = Json::array();
  for (size_t i = 0; i < r.regions.size(); ++i) {
    const auto& reg = r.regions[i];
    Json names = Json::array();
    for (int c : reg.conditions) names.push_back(r.design.conditions()[static_cast<size_t>(c)]);
    regions.push_back({{"centre_mm", {reg.centre_mm.x(), reg.centre_mm.y(), reg.centre_mm.z()}},
                       {"radius_mm", reg.radius_mm},
                       {"psc", reg.psc},
                       {"conditions", names},
                       {"gm_volume_mm3", r.region_gm_mm3[i]}});
  }
  act["regions"] = regions;
  act["mask_threshold"] = s.activation_mask_threshold;
  int64_t active = 0;
  for (float v : r.activation_mask.data()) active += v > 0.0f;
  act["mask_voxels"] = active;
  j["activation"] = act;

  j["noise"] = {{"tsnr_target_gm", s.tsnr},
                {"physio_share_of_gm_variance", s.physio_share},
                {"thermal_sd", r.levels.thermal_sd},
                {"physio_amplitude", r.levels.physio_amplitude},
                {"calibration_factor", r.levels.calibration},
                {"cardiac_hz", s.cardiac_hz},
                {"respiratory_hz", s.respiratory_hz},
                {"physio_weight_csf_gm_wm", s.physio_weight},
                {"drift_percent", s.drift_percent},
                {"distribution", s.noise == NoiseDistribution::kRician ? "rician" : "gaussian"}};
  j["achieved_tsnr"] = {{"definition", "mean / sd of the noise after removing a quadratic trend, motion-free"},
                        {"gm", summary_json(r.tsnr_gm)},
                        {"gm_core", summary_json(r.tsnr_gm_core)},
                        {"wm", summary_json(r.tsnr_wm)},
                        {"csf", summary_json(r.tsnr_csf)}};
  j["output"] = {{"datatype", to_string(s.datatype)},
                 {"scale", "output units: pure GM baseline = baseline[1] (default 10000), scl_slope 1"},
                 {"clipped_voxels", clipped}};
  j["runtime"] = {{"threads", r.threads}, {"synthesis_s", r.seconds_synthesis}, {"total_s", r.seconds_total}};
  return j.dump(2) + "\n";
}

WriteReport write_phantom(const PhantomResult& r, const std::filesystem::path& dir) {
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  WriteReport report;
  io::OutputSet outputs;  // the phantom's files appear together (a failure or Ctrl-C leaves none of them)
  auto nifti = [&](const char* name, const Image& image, DataType type) {
    write_nifti(outputs.add(dir / name), image, type);
    report.files.push_back(dir / name);
  };
  auto text = [&](const char* name, const std::string& content) {
    write_text_file(outputs.add(dir / name), content);
    report.files.push_back(dir / name);
  };
  if (r.spec.datatype == DataType::kInt16) report.clipped = count_clipped(r.bold);
  nifti("bold.nii.gz", r.bold, r.spec.datatype);
  text("bold.json", bold_sidecar_json(r.spec.tr_s, r.slice_times_s));
  nifti("brain_mask.nii.gz", r.brain_mask, DataType::kUint8);
  nifti("tissue.nii.gz", r.tissue_labels, DataType::kUint8);
  nifti("tissue_fractions.nii.gz", r.tissue_fractions, DataType::kFloat32);
  nifti("activation_mask.nii.gz", r.activation_mask, DataType::kUint8);
  nifti("activation_fraction.nii.gz", r.activation_fraction, DataType::kFloat32);
  nifti("activation_psc.nii.gz", r.activation_psc, DataType::kFloat32);
  text("motion.tsv", motion_tsv(r.motion));
  text("motion.par", motion_par(r.motion));
  text("events.tsv", events_tsv(r.design.events()));
  text("design.tsv", design_tsv(r.design));
  text("phantom.json", phantom_json(r, report.clipped));
  outputs.commit();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace rtf::sim
