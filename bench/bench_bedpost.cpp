// Ball-and-stick MCMC benchmark (issue 17, `rtfmri bedpost`): a whole-brain-sized synthetic set (default 150,000
// voxels, 64 directions at b 1000 plus 5 b = 0, a third each with 1, 2 (60 degree crossing) and 3 fibres, SNR 30),
// 3 fibres, bedpostx's default 1,000 burn-in + 1,250 jumps, every 25th kept. Times the starting states (tensor +
// Levenberg-Marquardt in double) on the device --runs times after one untimed run and on the host's cores once
// (--no-host-start: not), and the device chains (upload, every launch, samples read back) --runs times after one
// untimed run. Prints one JSON line with medians and the time per voxel.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <numbers>
#include <random>
#include <string>

#include "bench/bench_stats.hpp"
#include "core/device/device.hpp"
#include "core/diffusion/ball_stick_init.hpp"
#include "core/diffusion/ball_stick_mcmc.hpp"
#include "core/diffusion/ball_stick_start.hpp"
#include "core/diffusion/bedpost_outputs.hpp"
#include "core/diffusion/synthetic_dwi.hpp"

int main(int argc, char** argv) {
  std::string device_spec;
  int voxels = 150000, directions = 64, b0s = 5, runs = 3;
  bool use_double = false, no_host_start = false;
  std::string write_dir;
  rtf::BallStickOptions o;
  CLI::App app("rtfmri ball-and-stick MCMC benchmark (bedpost), JSON line");
  app.add_option("--device", device_spec, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--voxels", voxels, "Voxels")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--directions", directions, "Diffusion directions (b 1000)")->capture_default_str();
  app.add_option("--b0s", b0s, "b = 0 volumes")->capture_default_str();
  app.add_option("-n", o.fibres, "Fibres")->capture_default_str();
  app.add_option("-b", o.burn_in, "Burn-in")->capture_default_str();
  app.add_option("-j", o.jumps, "Jumps")->capture_default_str();
  app.add_option("-s", o.sample_every, "Sample every")->capture_default_str();
  app.add_option("--model", o.model, "1 or 2")->capture_default_str();
  app.add_flag("--rician", o.rician, "Rician noise model");
  app.add_option("--lanes", o.lanes, "Work-items per voxel in the chains (0: from the device)")->capture_default_str();
  app.add_flag("--double", use_double, "Chains in double (the reference's arithmetic)");
  app.add_flag("--no-host-start", no_host_start, "Do not time the host's start (all cores; slow for many voxels)");
  app.add_option("--write", write_dir,
                 "Also time writing FSL's files (write_bedpost_maps) into this existing folder, on a 2 mm MNI grid "
                 "(91 x 109 x 91) with the voxels spread over it");
  app.add_option("--runs", runs, "Timed runs")->check(CLI::PositiveNumber)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    auto device = rtf::Device::open(device_spec);
    fmt::print(stderr, "bench_bedpost: device {}\n", device->info().label());
    const rtf::DiffusionScheme scheme = rtf::synthetic_scheme(directions, b0s, 1000.0);
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::vector<rtf::BallStickParams> truth(static_cast<size_t>(voxels));
    for (size_t v = 0; v < truth.size(); ++v) {
      rtf::BallStickParams& p = truth[v];
      p.s0 = 1000.0;
      p.d = 0.0011;
      const double th = std::acos(2.0 * uniform(rng) - 1.0), ph = 2.0 * std::numbers::pi * uniform(rng);
      const int present = 1 + static_cast<int>(v % 3);
      for (int j = 0; j < 3; ++j) {
        const auto k = static_cast<size_t>(j);
        p.th[k] = j == 0 ? th : th + (j == 1 ? std::numbers::pi / 3.0 : std::numbers::pi / 2.0);
        p.ph[k] = j == 2 ? ph + std::numbers::pi / 2.0 : ph;
        p.f[k] = j < present ? (j == 0 ? 0.45 : 0.25) : 0.0;
      }
    }
    const std::vector<float> data = rtf::synthetic_voxels(scheme, truth, 3, 1, 30.0, false, 11);
    auto clock = std::chrono::steady_clock::now();
    double host_start_seconds = 0;
    if (!no_host_start) {
      (void)rtf::initialise_ball_stick(scheme, data.data(), voxels, o.fibres, o.model);
      host_start_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - clock).count();
    }
    std::vector<double> start_seconds;
    std::vector<rtf::BallStickParams> init;
    for (int run = 0; run <= runs; ++run) {
      clock = std::chrono::steady_clock::now();
      init = rtf::initialise_ball_stick_on_device(*device, scheme, data.data(), voxels, o.fibres, o.model);
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - clock).count();
      if (run > 0) start_seconds.push_back(t);
    }
    const double init_seconds = rtf::bench::summarize(start_seconds).median;
    std::vector<double> seconds;
    double f1 = 0, write_seconds = 0;
    for (int run = 0; run <= runs; ++run) {
      clock = std::chrono::steady_clock::now();
      const rtf::BallStickRun r = rtf::ball_stick_mcmc(*device, scheme, data, init, o, 0, {}, use_double);
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - clock).count();
      if (run > 0) seconds.push_back(t);
      if (run == runs && !write_dir.empty()) {
        rtf::ImageHeader grid;
        grid.dims = {91, 109, 91};
        grid.voxel_mm = {2.0, 2.0, 2.0};
        const int64_t total = grid.voxels_per_volume();
        std::vector<int64_t> where(static_cast<size_t>(voxels));
        for (int64_t v = 0; v < voxels; ++v) where[static_cast<size_t>(v)] = v * total / voxels;
        const auto start = std::chrono::steady_clock::now();
        rtf::write_bedpost_maps(write_dir, grid, where, r, o);
        write_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
      f1 = 0;
      for (int v = 0; v < voxels; ++v) f1 += r.f(0, r.samples - 1)[v];
      f1 /= voxels;
    }
    const rtf::bench::Timing timing = rtf::bench::summarize(seconds);
    const double iterations = static_cast<double>(o.burn_in + o.jumps);
    rtf::bench::print_line({{"bench", "bedpost"},
                            {"device", device->info().device_name},
                            {"voxels", voxels},
                            {"measurements", scheme.measurements()},
                            {"fibres", o.fibres},
                            {"model", o.model},
                            {"rician", o.rician},
                            {"double", use_double},
                            {"lanes", rtf::ball_stick_lanes(*device, scheme.measurements(), o)},
                            {"iterations", o.burn_in + o.jumps},
                            {"runs", timing.runs},
                            {"start_device_median_s", init_seconds},
                            {"start_host_s", host_start_seconds},
                            {"mcmc_median_s", timing.median},
                            {"mcmc_p95_s", timing.p95},
                            {"total_median_s", init_seconds + timing.median},
                            {"us_per_voxel", 1e6 * timing.median / voxels},
                            {"voxel_iterations_per_s", voxels * iterations / timing.median},
                            {"write_s", write_seconds},
                            {"mean_last_f1", f1}});
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_bedpost: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
