// First-level permutation benchmark (issue 15): the test of Eklund, Andersson & Knutsson (2012) as `rtfmri glm
// --noise arP --permutations N` runs it (core/permutation/first_level_permutation.hpp, docs/algorithms/glm_ar.md).
// Target: 10,000 permutations of 80 volumes at 64x64x22 with AR(4) whitening and smoothing per permutation in <= 2 s
// (Eklund et al. 2012: 45 s on three GTX 480). Times the whole first_level_permutation_test call: the null
// preparation (nuisance residuals, Yule-Walker AR maps, their smoothing, the whitening), the observed fit and every
// surrogate (re-colouring, smoothing, the AR(P) Cochrane-Orcutt fit, the maxima and, as asked, cluster extent and mass
// or TFCE). Data: baseline 1000 inside an ellipsoidal "brain" (semi-axes half the grid, about half the box) plus
// AR(4)-coloured Gaussian noise (rho 0.3, 0.1, 0.05, 0.02) of sd 10; design: 20 s on/off blocks of "task" at TR 2 s,
// SPM's cosine drift (128 s) and the constant; contrast: task. Prints one JSON line with the median and p95 of --runs
// runs after one untimed run (kernel compilation).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_stats.hpp"
#include "bench/first_level_data.hpp"
#include "bench/first_level_options.hpp"
#include "core/design/design_matrix.hpp"
#include "core/device/device.hpp"
#include "core/device/launch.hpp"
#include "core/filters/gaussian_smoothing.hpp"
#include "core/glm/ar_glm.hpp"
#include "core/image/image.hpp"
#include "core/permutation/first_level_permutation.hpp"

namespace {

using rtf::bench::innovation_sd;
constexpr double kTr = rtf::bench::kFirstLevelTr;
constexpr double kVoxelMm = rtf::bench::kFirstLevelVoxelMm;
constexpr auto kRho = rtf::bench::kFirstLevelRho;
constexpr double kNoiseSd = rtf::bench::kFirstLevelNoiseSd;
constexpr float kBaseline = rtf::bench::kFirstLevelBaseline;

bool all_finite(const auto& values) {
  for (const auto v : values) {
    if (!std::isfinite(static_cast<double>(v)) || v <= -std::numeric_limits<float>::max()) return false;
  }
  return true;
}

}  // namespace

// Milliseconds per surrogate of each part, by repeating it on a full batch (median of 5, after a warm-up), and the
// fixed cost of a run (a test of 1 + batch rearrangements minus one batch).
nlohmann::json profile_parts(rtf::Device& device, const rtf::Image& bold, const Eigen::MatrixXd& x,
                             const std::vector<rtf::GlmContrast>& contrasts, const std::vector<uint8_t>& mask,
                             const rtf::FirstLevelPermutationOptions& options) {
  const int batch = options.max_batch;
  const auto& h = bold.header();
  const size_t series = bold.data().size();
  const auto time_ms = [&](const std::function<void()>& work) {
    std::vector<double> ms;
    for (int i = 0; i <= 5; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      work();
      RTF_CL_CHECK(clFinish(device.queue()));
      if (i > 0) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return rtf::bench::summarize(ms).median;
  };
  rtf::DeviceBuffer<float> data(device, series * static_cast<size_t>(batch)), out(device, data.size());
  for (int b = 0; b < batch; ++b) data.write(device.queue(), bold.data(), static_cast<size_t>(b) * series);
  const rtf::ArGlmModel model = rtf::make_ar_glm_model(x, contrasts, options.ar.order);
  rtf::ArGlm glm(device, h.dims, h.voxel_mm, mask, model, options.ar, batch);
  rtf::ArGlmOptions one = options.ar;
  one.iterations = 1;
  rtf::ArGlm single_fit(device, h.dims, h.voxel_mm, mask, model, one, batch);
  rtf::GaussianSmoother smoother(
      device, h.dims, h.voxel_mm,
      rtf::SmoothingSpec{.fwhm_mm = std::max(options.fwhm_mm, 1.0), .path = rtf::SmoothingPath::kSeparablePasses},
      std::span<const uint8_t>(mask), static_cast<int64_t>(batch) * bold.nt());
  nlohmann::json parts;
  parts["ar_glm"] = time_ms([&] {
                      glm.fit(data, batch);
                      glm.maxima(batch);
                    }) /
                    batch;
  parts["one_fit"] = time_ms([&] {
                       single_fit.fit(data, batch);
                       single_fit.maxima(batch);
                     }) /
                     batch;
  parts["smoothing"] = time_ms([&] { smoother.enqueue(data, out, static_cast<int64_t>(batch) * bold.nt()); }) / batch;
  parts["null_preparation"] = time_ms([&] { rtf::prepare_ar_null(device, bold, x, contrasts, mask, options.ar); });
  rtf::FirstLevelPermutationOptions small = options;
  small.permutations = 1 + batch;
  const double whole = time_ms([&] { rtf::first_level_permutation_test(device, bold, x, contrasts, mask, small); });
  parts["one_batch_run"] = whole;
  return parts;
}

int main(int argc, char** argv) {
  rtf::bench::FirstLevelBenchOptions o{.dims = {64, 64, 22}, .permutations = 10000};
  std::string inference = "voxel";
  int runs = 3;
  bool profile = false;
  CLI::App app("rtfmri first-level permutation benchmark (AR(P) whitening, smoothing per permutation): JSON line");
  rtf::bench::add_first_level_options(app, o, 32);
  app.add_option("--inference", inference, "voxel (max t), cluster (extent and mass at t 3.1) or tfce")
      ->check(CLI::IsMember({"voxel", "cluster", "tfce"}))
      ->capture_default_str();
  app.add_option("--runs", runs, "Timed runs")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_flag("--profile", profile,
               "Also time the parts per surrogate: the AR fits, the smoothing, the null preparation, the fixed cost");
  CLI11_PARSE(app, argc, argv);

  try {
    auto device = rtf::Device::open(o.device_spec);
    fmt::print(stderr, "bench_glm_permutation: device {}\n", device->info().label());

    // The grid and the ellipsoidal mask.
    const rtf::bench::FirstLevelGrid first_grid = rtf::bench::first_level_grid(o.grid(), o.volumes);
    const rtf::ImageHeader& h = first_grid.header;
    const size_t grid = static_cast<size_t>(h.voxels_per_volume());
    const std::vector<uint8_t>& mask = first_grid.mask;
    const size_t mask_voxels = first_grid.mask_voxels;

    // The series: baseline plus AR(4) noise inside the mask (a burn-in of 100 samples per voxel), 0 outside.
    rtf::Image bold(h, 0.0f);
    std::mt19937 rng(1);
    std::normal_distribution<double> normal(0.0, innovation_sd());
    constexpr int kBurnIn = 100;
    std::vector<double> e(static_cast<size_t>(kBurnIn + o.volumes));
    for (size_t v = 0; v < grid; ++v) {
      if (!mask[v]) continue;
      for (size_t t = 0; t < e.size(); ++t) {
        double x = normal(rng);
        for (size_t k = 1; k <= kRho.size() && k <= t; ++k) x += kRho[k - 1] * e[t - k];
        e[t] = x;
      }
      for (int64_t t = 0; t < o.volumes; ++t) {
        bold.data()[static_cast<size_t>(t) * grid + v] =
            kBaseline + static_cast<float>(e[static_cast<size_t>(kBurnIn + t)]);
      }
    }

    // The design: 20 s on / 20 s off blocks of "task", cosine drift (128 s), the constant; contrast task.
    const rtf::bench::FirstLevelDesign first_design = rtf::bench::first_level_design(o.volumes);
    const rtf::DesignMatrix& design = first_design.design;
    const std::vector<rtf::GlmContrast>& contrasts = first_design.contrasts;

    rtf::FirstLevelPermutationOptions options = o.permutation_options();
    options.seed = 1;
    options.cluster_extent = options.cluster_mass = inference == "cluster";
    options.cluster_threshold = 3.1;
    options.tfce = inference == "tfce";

    std::vector<double> seconds;
    rtf::FirstLevelPermutationResult r;
    for (int run = 0; run <= runs; ++run) {
      const auto t0 = std::chrono::steady_clock::now();
      r = rtf::first_level_permutation_test(*device, bold, design.x, contrasts, mask, options);
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (run > 0) seconds.push_back(elapsed);
    }

    // The null distributions: one value per rearrangement (all of them unless enumerated exhaustively), finite.
    const auto count = static_cast<size_t>(r.count);
    bool ok = r.contrasts.size() == 1 && r.count >= 2 &&
              (r.count == o.permutations || (r.exhaustive && r.count < o.permutations));
    if (ok) {
      const rtf::FirstLevelContrastResult& c = r.contrasts[0];
      ok = c.max_null.size() == count && all_finite(c.max_null) && c.observed.size() == mask_voxels;
      if (options.cluster_extent) {
        ok = ok && c.max_extent.size() == count && c.max_mass.size() == count && all_finite(c.max_mass);
      }
      if (options.tfce) ok = ok && c.max_tfce.size() == count && all_finite(c.max_tfce);
    }

    nlohmann::json parts;
    if (profile) parts = profile_parts(*device, bold, design.x, contrasts, mask, options);
    const rtf::bench::Timing timing = rtf::bench::summarize(seconds);
    nlohmann::json line = {
        {"bench", "glm_permutation"},
        {"device", device->info().device_name},
        {"device_label", device->info().label()},
        {"mask_voxels", mask_voxels},
        {"permutations", r.count},
        {"exhaustive", r.exhaustive},
        {"inference", inference},
        {"batch", o.batch},
        {"runs", timing.runs},
        {"median_s", timing.median},
        {"p95_s", timing.p95},
        {"per_permutation_ms", 1e3 * timing.median / static_cast<double>(std::max(r.count, 1))},
        {"bytes_per_permutation", static_cast<double>(o.volumes) * static_cast<double>(mask_voxels) * 4.0},
        {"largest_null_t", r.contrasts.empty() || r.contrasts[0].max_null.empty()
                               ? 0.0f
                               : *std::max_element(r.contrasts[0].max_null.begin(), r.contrasts[0].max_null.end())},
        {"null_ok", ok}};
    line.update(o.json());
    if (profile) line["parts_ms"] = parts;
    rtf::bench::print_line(line);
    if (!ok) {
      fmt::print(stderr, "bench_glm_permutation: the null distribution has the wrong size or non-finite values\n");
      return 1;
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_glm_permutation: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
