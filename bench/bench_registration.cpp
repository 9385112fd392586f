// Registration benchmark (issue 14): a real T1 (fcon1000, 1.33 x 1 x 1 mm) -> MNI152 1 mm, affine (12 dof, NCC,
// coarse to fine) on the device, and resampling the T1 onto the template grid; with --synthetic-epi --cost mi --dof 6
// the live EPI -> T1 step (a 3 mm EPI-like image of known pose against a 1 mm T1). Prints one JSON line per run
// configuration with the wall-clock median/p95 of the whole registration, each level's median time, iterations and the
// NCC reached, the set-up's share (the constructor: checks, uploads, buffers), and the resampling time with its
// effective memory bandwidth. The first run (kernel compilation, warm-up) is not timed.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <Eigen/Geometry>
#include <algorithm>
#include <chrono>
#include <string>

#include "bench/bench_stats.hpp"
#include "bench/extra_data.hpp"
#include "core/device/device.hpp"
#include "core/io/nifti_io.hpp"
#include "core/registration/linear_registration.hpp"
#include "core/registration/resample.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Options {
  std::string device;
  std::string moving = rtf::bench::extra_data("anat/fcon1000_Beijing_sub00440_T1_brain.nii.gz");
  std::string fixed = rtf::bench::extra_data("templates/MNI152_T1_1mm_brain.nii.gz");
  std::string levels = "8:8,4:4,2:2";
  std::string cost = "ncc";
  int dof = 12;
  bool synthetic_epi = false;
  int runs = 5;
};

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"rtfmri registration benchmark: T1 -> MNI152 1 mm affine, JSON lines"};
  app.add_option("--device", opt.device, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--moving", opt.moving, "Moving T1")->capture_default_str();
  app.add_option("--fixed", opt.fixed, "Template")->capture_default_str();
  app.add_option("--levels", opt.levels, "SPACING:FWHM per level")->capture_default_str();
  app.add_option("--runs", opt.runs, "Timed runs")->capture_default_str();
  app.add_option("--cost", opt.cost, "ncc, mi or lncc")
      ->capture_default_str()
      ->check(CLI::IsMember({"ncc", "mi", "lncc"}));
  app.add_option("--dof", opt.dof, "6, 9 or 12")->capture_default_str()->check(CLI::IsMember({6, 9, 12}));
  app.add_flag(
      "--synthetic-epi", opt.synthetic_epi,
      "The live EPI -> T1 case: the moving image is --fixed itself on a 64x64x40 3 mm oblique grid, moved by a "
      "known rigid transform, with its contrast inverted inside the head (as an EPI against a T1); reports "
      "the error against the truth");
  CLI11_PARSE(app, argc, argv);

  auto device_handle = rtf::Device::open(opt.device);
  rtf::Device& device = *device_handle;
  const rtf::Image fixed = rtf::read_nifti(opt.fixed);
  Eigen::Matrix4d truth = Eigen::Matrix4d::Identity();
  rtf::Image moving;
  if (opt.synthetic_epi) {
    // 5.7 degrees about an oblique axis and (-5, 4, 6) mm, about the fixed image's centre.
    const Eigen::Vector3d c = (fixed.header().affine * Eigen::Vector4d(0.5 * static_cast<double>(fixed.nx() - 1),
                                                                       0.5 * static_cast<double>(fixed.ny() - 1),
                                                                       0.5 * static_cast<double>(fixed.nz() - 1), 1.0))
                                  .head<3>();
    const Eigen::Matrix3d r = Eigen::AngleAxisd(0.1, Eigen::Vector3d(0.5, -1.0, 0.3).normalized()).toRotationMatrix();
    truth.topLeftCorner<3, 3>() = r;
    truth.topRightCorner<3, 1>() = c + Eigen::Vector3d(-5.0, 4.0, 6.0) - r * c;
    rtf::ImageHeader epi;
    epi.dims = {64, 64, 40};
    epi.voxel_mm = {3.0, 3.0, 3.0};
    const Eigen::Matrix3d tilt = Eigen::AngleAxisd(0.25, Eigen::Vector3d::UnitX()).toRotationMatrix() * 3.0;
    epi.affine.topLeftCorner<3, 3>() = tilt;
    epi.affine.topRightCorner<3, 1>() = c - tilt * Eigen::Vector3d(31.5, 31.5, 19.5);
    moving = rtf::resample(device, fixed, epi, {Eigen::Matrix4d(truth.inverse())}, rtf::ResampleInterpolation::kLinear);
    float top = 0.0f;
    for (float v : moving.data()) top = std::max(top, v);
    for (float& v : moving.data()) v = v > 0.02f * top ? 1.2f * top - v : 0.0f;
  } else {
    moving = rtf::read_nifti(opt.moving);
  }
  rtf::LinearRegistrationOptions options;
  options.dof = opt.dof;
  options.cost = opt.cost == "mi"     ? rtf::LinearCost::kMi
                 : opt.cost == "lncc" ? rtf::LinearCost::kLncc
                                      : rtf::LinearCost::kNcc;
  options.levels = rtf::parse_linear_levels(opt.levels);
  const Eigen::Matrix4d start = rtf::centre_of_mass_alignment(fixed, moving);

  std::vector<double> total_ms, resample_ms, setup_ms;
  std::vector<std::vector<double>> level_ms(options.levels.size());
  rtf::LinearRegistrationResult last;
  for (int run = 0; run <= opt.runs; ++run) {
    const auto t0 = Clock::now();
    rtf::LinearRegistration reg(device, fixed, moving, options);
    const double setup = ms_since(t0);
    last = reg.run(start);
    const double ms = ms_since(t0);
    const auto t1 = Clock::now();
    const rtf::Image warped =
        rtf::resample(device, moving, fixed.header(), {last.transform}, rtf::ResampleInterpolation::kLinear);
    const double rs = ms_since(t1);
    if (run == 0) continue;  // compilation and first-touch
    total_ms.push_back(ms);
    resample_ms.push_back(rs);
    setup_ms.push_back(setup);
    for (size_t l = 0; l < last.levels.size(); ++l) level_ms[l].push_back(1e3 * last.levels[l].seconds);
  }
  nlohmann::json levels = nlohmann::json::array();
  for (size_t l = 0; l < last.levels.size(); ++l) {
    const auto& r = last.levels[l];
    levels.push_back({{"spacing_mm", r.level.spacing_mm},
                      {"fwhm_mm", r.level.fwhm_mm},
                      {"stride", r.stride},
                      {"points", r.points},
                      {"iterations", r.iterations},
                      {"ncc", r.ncc},
                      {"mi", r.mi},
                      {"lncc", r.lncc},
                      {"median_ms", rtf::bench::summarize(level_ms[l]).median}});
  }
  const auto total = rtf::bench::summarize(total_ms);
  const auto rs = rtf::bench::summarize(resample_ms);
  // Resampling moves the positions (16 B written + read per output voxel) and the output (4 B) plus the input's reads.
  const double out_voxels = static_cast<double>(fixed.header().voxels_per_volume());
  const double bytes = out_voxels * (16.0 * 2 + 16.0 + 4.0) + static_cast<double>(moving.data().size()) * 4.0;
  // Error against the truth over the fixed image's voxels above 0 (synthetic EPI only).
  double worst_mm = 0.0;
  if (opt.synthetic_epi) {
    for (int64_t z = 0; z < fixed.nz(); z += 2) {
      for (int64_t y = 0; y < fixed.ny(); y += 2) {
        for (int64_t x = 0; x < fixed.nx(); x += 2) {
          if (!(fixed.at(x, y, z) > 0.0f)) continue;
          const Eigen::Vector4d w =
              fixed.header().affine *
              Eigen::Vector4d(static_cast<double>(x), static_cast<double>(y), static_cast<double>(z), 1.0);
          worst_mm = std::max(worst_mm, ((truth - last.transform) * w).head<3>().norm());
        }
      }
    }
  }
  rtf::bench::print_line(
      {{"bench", "registration"},
       {"case", opt.synthetic_epi ? "synthetic EPI (3 mm, inverted contrast) -> " + opt.fixed : "T1 -> template"},
       {"cost", opt.cost},
       {"dof", opt.dof},
       {"levels_spec", opt.levels},
       {"max_error_mm", opt.synthetic_epi ? nlohmann::json(worst_mm) : nlohmann::json(nullptr)},
       {"moving", opt.synthetic_epi ? std::string("synthetic") : opt.moving},
       {"fixed", opt.fixed},
       {"device", device.info().device_name},
       {"runs", total.runs},
       {"median_ms", total.median},
       {"p95_ms", total.p95},
       {"setup_median_ms", rtf::bench::summarize(setup_ms).median},
       {"initial_ncc", last.initial_ncc},
       {"ncc", last.ncc},
       {"initial_mi", last.initial_mi},
       {"mi", last.mi},
       {"lncc", last.lncc},
       {"iterations", last.iterations},
       {"levels", levels},
       {"resample_median_ms", rs.median},
       {"resample_gb_per_s", bytes / (rs.median * 1e-3) / 1e9}});
  return 0;
}
