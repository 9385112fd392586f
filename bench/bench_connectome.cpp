// Connectome benchmark (issue 16): thresholded correlations of every pair of N nodes with series of L samples, as Zhao
// et al. measured them ("full matrix": every pair computed; here each tile is thresholded where it is computed and
// only the passing pairs leave the device). Random normal series (the time does not depend on them at a threshold few
// pairs pass; --threshold lower to time the edge traffic too; --integers for tied data). Times the device part (upload
// of the normalised series, every tile, the edges read back) or, with --density, the whole selection (the sampled
// cut, the candidate pass, the host's exact choice of the k largest), and, separately, the host's gathering of the
// series and the device's ranking and normalisation (kernels/node_normalise.cl, with the series' transfers both ways).
// Prints one JSON line: medians and p95 of --runs runs after --warmup untimed ones, multiply-adds and their rate.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <thread>

#include "bench/bench_stats.hpp"
#include "core/connectome/density_threshold.hpp"
#include "core/connectome/kendall.hpp"
#include "core/connectome/node_series.hpp"
#include "core/connectome/thresholded_correlation.hpp"
#include "core/device/device.hpp"

int main(int argc, char** argv) {
  std::string device_spec, method = "pearson";
  int64_t nodes = 58523, length = 512;
  double threshold = 0.5, density = 0.0;
  int warmup = 1;
  bool absolute = false, integers = false;
  int runs = 5;
  CLI::App app("rtfmri connectome benchmark: thresholded correlations of every node pair, JSON line");
  app.add_option("--device", device_spec, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--nodes", nodes, "N")->check(CLI::Range(int64_t{2}, int64_t{2000000000}))->capture_default_str();
  app.add_option("--length", length, "L, samples per series")
      ->check(CLI::Range(int64_t{3}, int64_t{100000}))
      ->capture_default_str();
  app.add_option("--method", method, "pearson, spearman or kendall (tau-b)")
      ->check(CLI::IsMember({"pearson", "spearman", "kendall"}))
      ->capture_default_str();
  app.add_option("--threshold", threshold, "Keep r >= threshold")->capture_default_str();
  app.add_flag("--absolute", absolute, "Keep |r| >= threshold");
  app.add_flag("--integers", integers,
               "Round the random series (mean 100, sd 10) to integers, as int16 BOLD is: ties in every series "
               "(Kendall's two-popcount path)");
  app.add_option("--density", density,
                 "Instead of --threshold: keep the fraction D of pairs with the largest r (the sampled cut, the "
                 "candidate pass, the exact selection on the host: all timed)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--runs", runs, "Timed runs")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--warmup", warmup, "Untimed runs before them")->check(CLI::NonNegativeNumber)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    auto device = rtf::Device::open(device_spec);
    fmt::print(stderr, "bench_connectome: device {}\n", device->info().label());
    const rtf::CorrelationMethod m =
        method == "spearman" ? rtf::CorrelationMethod::kSpearman : rtf::CorrelationMethod::kPearson;
    const bool kendall = method == "kendall";
    double host_s = 0;
    rtf::NodeSeries raw;
    {
      rtf::ImageHeader h;
      h.dims = {nodes, 1, 1};
      h.num_volumes = length;
      rtf::Image series_image(h);
      // Each volume from its own seeded generator, volumes spread over the host's threads.
      std::vector<std::thread> threads;
      const int64_t workers = std::max<int64_t>(1, std::thread::hardware_concurrency());
      for (int64_t w = 0; w < workers; ++w) {
        threads.emplace_back([&, w] {
          for (int64_t t = w; t < length; t += workers) {
            std::mt19937 rng(static_cast<uint32_t>(t + 1));
            std::normal_distribution<float> normal(100.0f, 10.0f);
            for (float& x : series_image.volume(t)) x = integers ? std::round(normal(rng)) : normal(rng);
          }
        });
      }
      for (std::thread& t : threads) t.join();
      const std::vector<uint8_t> mask(static_cast<size_t>(nodes), 1);
      const auto t0 = std::chrono::steady_clock::now();
      raw = rtf::node_series(series_image, mask, m, false);
      host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    std::vector<double> normalise_seconds;
    rtf::NodeSeries series;
    for (int run = 0; run <= std::min(runs, 2); ++run) {
      series = raw;
      const auto start = std::chrono::steady_clock::now();
      if (!kendall) rtf::normalise_on_device(*device, series);
      if (kendall) rtf::mark_constant_series(series);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (run > 0) normalise_seconds.push_back(s);
    }
    double ties_s = 0;  // Kendall: the host's tie analysis (inside the timed call too)
    if (kendall) {
      const auto start = std::chrono::steady_clock::now();
      (void)rtf::kendall_denominators(series);
      ties_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    raw = {};
    std::vector<double> seconds;
    int64_t edges = 0;
    rtf::DensityEdges at_density;
    const rtf::CorrelationPass pass = [&](const rtf::NodeSeries& s, const rtf::CorrelationThreshold& t,
                                          const rtf::EdgeSink& sink, const rtf::TileRowProgress& p) {
      if (kendall) {
        rtf::kendall_correlations(*device, s, t, sink, p);
      } else {
        rtf::thresholded_correlations(*device, s, t, sink, p);
      }
    };
    for (int run = 0; run < warmup + runs; ++run) {
      edges = 0;
      const auto start = std::chrono::steady_clock::now();
      if (density > 0) {
        at_density = {};
        at_density = rtf::edges_at_density(pass, series, density, absolute);
        edges = static_cast<int64_t>(at_density.edges.size());
      } else {
        pass(series, {.value = threshold, .absolute = absolute},
             [&](std::span<const rtf::Edge> e) { edges += static_cast<int64_t>(e.size()); }, {});
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (run >= warmup) seconds.push_back(s);
    }
    const rtf::bench::Timing t = rtf::bench::summarize(seconds);
    // Multiply-adds of the computed tiles (Pearson/Spearman: the upper triangle of 128 x 128 tiles, diagonal tiles
    // whole, padded length); Kendall: node pairs x time pairs (sign products, 32 per pair of words).
    const double tile = kendall ? 64.0 : 128.0, tiles = std::ceil(static_cast<double>(nodes) / tile);
    const double depth = kendall ? static_cast<double>(length) * static_cast<double>(length - 1) / 2
                                 : static_cast<double>(series.padded);
    const double fma = tiles * (tiles + 1) / 2 * tile * tile * depth;
    rtf::bench::print_line({{"bench", "connectome"},
                            {"device", device->info().device_name},
                            {"method", method},
                            {"nodes", nodes},
                            {"length", length},
                            {"threshold", density > 0 ? at_density.threshold : threshold},
                            {"density", density},
                            {"density_passes", at_density.passes},
                            {"density_candidates", at_density.candidates},
                            {"density_sample_s", at_density.sample_seconds},
                            {"density_pass_s", at_density.pass_seconds},
                            {"density_select_s", at_density.select_seconds},
                            {"absolute", absolute},
                            {"integers", integers},
                            {"edges", edges},
                            {"runs", t.runs},
                            {"median_s", t.median},
                            {"p95_s", t.p95},
                            {"host_gather_s", host_s},
                            {"host_ties_s", ties_s},
                            {"normalise_median_s", rtf::bench::summarize(normalise_seconds).median},
                            {"multiply_adds", fma},
                            {"tfma_per_s", fma / t.median * 1e-12}});
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_connectome: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
