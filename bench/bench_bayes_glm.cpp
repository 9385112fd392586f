// Bayesian first-level GLM benchmark (issue 17): BROCCOLI's case, 11,000 Gibbs steps (1,000 of them burn-in) for
// 44,220 voxels, on random AR(1) series of --volumes volumes and a design of --regressors columns (an intercept and
// blocks), sampling AR(--ar) noise (1 .. 4); the whole summary (kernels/bayes_glm.cl bayes_glm_summary, the series'
// upload, the sums read back and combined into means, SDs, PPMs, split-R-hat and ESS). Prints one JSON line: median and
// p95 of --runs runs after one untimed run, and voxel-steps per second.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <random>
#include <string>

#include "bench/bench_stats.hpp"
#include "core/device/device.hpp"
#include "core/glm/bayes_glm.hpp"

int main(int argc, char** argv) {
  std::string device_spec;
  int voxels = 44220, volumes = 160, regressors = 2, steps = 11000, burn_in = 1000, chains = 1, runs = 3, order = 1;
  CLI::App app("rtfmri Bayesian GLM benchmark (Gibbs sampler, AR(L)), JSON line");
  app.add_option("--device", device_spec, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--voxels", voxels, "Voxels")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--volumes", volumes, "Volumes")->check(CLI::Range(8, 100000))->capture_default_str();
  app.add_option("--regressors", regressors, "Design columns")->check(CLI::Range(1, 16))->capture_default_str();
  app.add_option("--steps", steps, "Gibbs steps per chain, burn-in included")->capture_default_str();
  app.add_option("--burn-in", burn_in, "Steps dropped")->capture_default_str();
  app.add_option("--chains", chains, "Chains per voxel")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--runs", runs, "Timed runs")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--ar", order, "AR order L of the sampled noise")->check(CLI::Range(1, 4))->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    auto device = rtf::Device::open(device_spec);
    fmt::print(stderr, "bench_bayes_glm: device {}\n", device->info().label());
    Eigen::MatrixXd design(volumes, regressors);
    for (int t = 0; t < volumes; ++t) {
      for (int j = 0; j < regressors; ++j) design(t, j) = j == 0 ? 1.0 : ((t / (10 + 3 * j)) % 2 == 0 ? 1.0 : 0.0);
    }
    std::mt19937 rng(1);
    std::normal_distribution<double> normal;
    std::vector<float> series(static_cast<size_t>(voxels) * static_cast<size_t>(volumes));
    for (int v = 0; v < voxels; ++v) {
      double e = 0;
      for (int t = 0; t < volumes; ++t) {
        e = 0.3 * e + 5.0 * normal(rng);
        series[static_cast<size_t>(v) * static_cast<size_t>(volumes) + static_cast<size_t>(t)] =
            static_cast<float>(1000.0 + 2.0 * design(t, regressors - 1) + e);
      }
    }
    Eigen::MatrixXd contrasts = Eigen::MatrixXd::Zero(1, regressors);
    contrasts(0, regressors - 1) = 1.0;
    std::vector<double> seconds;
    double median_r_hat = 0;
    for (int run = 0; run <= runs; ++run) {
      const auto start = std::chrono::steady_clock::now();
      const rtf::BayesGlmSummary s =
          rtf::bayes_glm_summary(*device, series, voxels, design, contrasts, {}, 1, chains, steps, burn_in, 0.0, order);
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (run > 0) seconds.push_back(t);
      std::vector<double> r = s.r_hat[0];
      std::nth_element(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(r.size() / 2), r.end());
      median_r_hat = r[r.size() / 2];
    }
    const rtf::bench::Timing timing = rtf::bench::summarize(seconds);
    const double voxel_steps = static_cast<double>(voxels) * chains * steps;
    rtf::bench::print_line({{"bench", "bayes_glm"},
                            {"device", device->info().device_name},
                            {"voxels", voxels},
                            {"volumes", volumes},
                            {"regressors", regressors},
                            {"ar_order", order},
                            {"steps", steps},
                            {"burn_in", burn_in},
                            {"chains", chains},
                            {"runs", timing.runs},
                            {"median_s", timing.median},
                            {"p95_s", timing.p95},
                            {"voxel_steps_per_s", voxel_steps / timing.median},
                            {"median_split_r_hat", median_r_hat}});
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_bayes_glm: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
