// Motion-correction benchmark (issue 4): per-volume rigid registration to volume 0 plus reslicing, on phantom series
// with known motion (Colin27 template), at 64x64x33 (3 mm), 104x104x72 (2 mm) and BROCCOLI's 72x72x47 case.
// Per volume, as the live stage does it: upload the volume, register from the previous estimate, reslice, finish.
// Prints one JSON line per grid and configuration: wall-clock median/p95/max per volume, iterations, a per-stage
// breakdown of device time (kernels, copies and the per-iteration read-back of the sums), and the RMS error of the
// estimates against the phantom's truth, so speed and accuracy of each configuration are read together.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <string>

#include "bench/bench_stats.hpp"
#include "core/device/kernel_profile.hpp"
#include "core/io/nifti_io.hpp"
#include "core/registration/rigid_registration.hpp"
#include "sim/phantom/phantom.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string device;
  std::string template_path = "build/data/mricron/ch2bet.nii.gz";
  int warmup = 5;
  int runs = 60;
  std::string filter;
  double max_motion = 3.0;
  double tsnr = 80.0;
  double psc = 2.0;
  int supersample = 2;
  int margin = -1;
  double drift = 1.0;
  double final_fwhm = -1.0;
};

struct Case {
  std::string name;
  std::array<int64_t, 3> dims;
  std::array<double, 3> voxel_mm;
  int64_t volumes;  // 0: warmup + runs
};

struct Config {
  std::string name;
  rtf::RegistrationOptions options;
  rtf::Interpolation reslice = rtf::Interpolation::kCubic;
};

std::vector<Config> configs() {
  std::vector<Config> c;
  c.push_back({"default (one level, cubic, intensity field)", {}, rtf::Interpolation::kCubic});
  Config fast{"trilinear, rigid only", {}, rtf::Interpolation::kTrilinear};
  fast.options.levels.back().interpolation = rtf::Interpolation::kTrilinear;
  fast.options.intensity_model = false;
  c.push_back(fast);
  Config pyramid{"two levels (stride 2 at 8 mm, then 6 mm)", {}, rtf::Interpolation::kCubic};
  pyramid.options.levels = {{2, 8.0, rtf::Interpolation::kTrilinear}, {1, 6.0, rtf::Interpolation::kCubic}};
  c.push_back(pyramid);
  return c;
}

rtf::sim::PhantomResult make_series(const Options& opt, const Case& c, const rtf::Image& t1) {
  rtf::sim::PhantomSpec spec;
  spec.grid = c.dims;
  spec.voxel_mm = c.voxel_mm;
  spec.volumes = c.volumes > 0 ? c.volumes : opt.warmup + opt.runs;
  spec.tsnr = opt.tsnr;
  spec.psc = opt.psc;
  spec.drift_percent = opt.drift;
  spec.supersample = opt.supersample;
  spec.motion = rtf::sim::MotionKind::kRealistic;
  spec.max_translation_mm = opt.max_motion;
  spec.max_rotation_deg = opt.max_motion;
  spec.seed = 5;
  return rtf::sim::make_phantom(spec, t1);
}

void bench_case(rtf::Device& dev, const Options& opt, const Case& c, const rtf::sim::PhantomResult& ph,
                const Config& config) {
  const rtf::Image& bold = ph.bold;
  rtf::RegistrationOptions options = config.options;
  if (opt.margin > 0) options.edge_margin_voxels = opt.margin;
  if (opt.final_fwhm >= 0) options.levels.back().smoothing_fwhm_mm = opt.final_fwhm;
  rtf::RigidRegistration reg(dev, bold.header(), options);
  const auto n = static_cast<size_t>(bold.header().voxels_per_volume());
  rtf::DeviceBuffer<float> volume(dev, n), corrected(dev, n);
  const auto t_ref = Clock::now();
  reg.set_reference(bold.volume(0));
  const double reference_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_ref).count();

  rtf::KernelProfile profile;
  std::vector<double> wall_ms, iterations;
  std::array<double, 6> sq_error{};
  int errors_counted = 0, not_converged = 0;
  double series_ms = 0.0;
  Eigen::Matrix4d estimate = Eigen::Matrix4d::Identity();
  const int64_t warmup = c.volumes > 0 ? 0 : opt.warmup;
  for (int64_t t = 1; t < bold.nt(); ++t) {
    const bool timed = t > warmup;
    reg.set_profile(timed ? &profile : nullptr);
    const auto t0 = Clock::now();
    volume.write(dev.queue(), bold.volume(t));
    const rtf::RegistrationResult r = reg.register_volume(volume, 0, estimate);
    if (r.converged) estimate = r.transform;
    reg.reslice(volume, 0, estimate, corrected, config.reslice);
    RTF_CL_CHECK(clFinish(dev.queue()));
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    series_ms += ms;
    if (!r.converged) ++not_converged;
    if (!timed) continue;
    profile.collect();
    wall_ms.push_back(ms);
    iterations.push_back(r.iterations);
    const rtf::RigidParams got = rtf::rigid_params(estimate, ph.grid.centre_mm);
    const rtf::RigidParams& truth = ph.motion[static_cast<size_t>(t)];
    for (size_t a = 0; a < 3; ++a) {
      sq_error[a] += std::pow(got.translation_mm[a] - truth.translation_mm[a], 2);
      sq_error[3 + a] += std::pow(got.rotation_deg[a] - truth.rotation_deg[a], 2);
    }
    ++errors_counted;
  }
  const auto wall = rtf::bench::summarize(wall_ms);
  nlohmann::json stages = nlohmann::json::object();
  for (const auto& [stage, total] : profile.total_ms()) {
    stages[stage] = {{"ms_per_volume", total / static_cast<double>(wall.runs)},
                     {"launches_per_volume", profile.launches().at(stage) / static_cast<double>(wall.runs)}};
  }
  std::array<double, 6> rms{};
  for (size_t a = 0; a < 6; ++a) rms[a] = std::sqrt(sq_error[a] / std::max(errors_counted, 1));
  rtf::bench::print_line({{"bench", "motion"},
                          {"case", c.name},
                          {"size", fmt::format("{}x{}x{}", c.dims[0], c.dims[1], c.dims[2])},
                          {"voxel_mm", c.voxel_mm},
                          {"config", config.name},
                          {"edge_margin_voxels", options.edge_margin_voxels},
                          {"device", dev.info().device_name},
                          {"volumes", bold.nt()},
                          {"median_ms", wall.median},
                          {"p95_ms", wall.p95},
                          {"min_ms", wall.min},
                          {"max_ms", *std::max_element(wall_ms.begin(), wall_ms.end())},
                          {"runs", wall.runs},
                          {"series_ms", series_ms},
                          {"reference_setup_ms", reference_ms},
                          {"iterations_median", rtf::bench::summarize(iterations).median},
                          {"not_converged", not_converged},
                          {"rms_error_mm", {rms[0], rms[1], rms[2]}},
                          {"rms_error_deg", {rms[3], rms[4], rms[5]}},
                          {"device_ms_by_stage", stages}});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rtfmri motion-correction benchmark: JSON lines on stdout"};
  Options opt;
  app.add_option("--device", opt.device, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--template", opt.template_path, "Colin27 brain (mricron's ch2bet.nii.gz)")->capture_default_str();
  app.add_option("--warmup", opt.warmup, "Volumes registered before timing starts")->check(CLI::NonNegativeNumber);
  app.add_option("--runs", opt.runs, "Timed volumes per case")->check(CLI::PositiveNumber);
  app.add_option("--max-motion", opt.max_motion, "Largest translation (mm) and rotation (deg) of the phantom")
      ->capture_default_str();
  app.add_option("--tsnr", opt.tsnr, "Phantom tSNR (0: no noise)")->capture_default_str();
  app.add_option("--psc", opt.psc, "Phantom activation, percent signal change")->capture_default_str();
  app.add_option("--supersample", opt.supersample, "Phantom sub-samples per EPI voxel and axis")->capture_default_str();
  app.add_option("--drift", opt.drift, "Phantom drift, percent of the signal")->capture_default_str();
  app.add_option("--final-fwhm", opt.final_fwhm, "Smoothing (mm) at the finest level (default: the library's)");
  app.add_option("--margin", opt.margin, "Registration edge margin in voxels (default: the library's)");
  app.add_option("--filter", opt.filter, "Only cases or configurations whose name contains this");
  bool broccoli = false;
  app.add_flag("--broccoli", broccoli, "Also the whole 72x72x47x119 series (BROCCOLI's motion-correction case)");
  CLI11_PARSE(app, argc, argv);
  try {
    auto dev = rtf::Device::open(opt.device);
    const rtf::Image t1 = rtf::read_nifti(opt.template_path);
    std::vector<Case> cases{{"live", {64, 64, 33}, {3.0, 3.0, 3.0}, 0}, {"live", {104, 104, 72}, {2.0, 2.0, 2.0}, 0}};
    if (broccoli) cases.push_back({"broccoli series", {72, 72, 47}, {3.0, 3.0, 3.0}, 119});
    for (const Case& c : cases) {
      const auto ph = make_series(opt, c, t1);
      for (const Config& config : configs()) {
        const std::string label = c.name + " " + config.name;
        if (!opt.filter.empty() && label.find(opt.filter) == std::string::npos) continue;
        bench_case(*dev, opt, c, ph, config);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_motion: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
