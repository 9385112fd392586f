// Sliding-window CCA benchmark (issue 5): per-TR time at 64x64x33 (3 mm) and 104x104x72 (2 mm) with a window of 100
// volumes, for the planar (isotropic + 3 oriented, 15 filter subsets) and volumetric (isotropic + 6, 127 subsets)
// filter sets, sine/cosine basis (2 columns). Per TR, as the live stage does it: upload the new volume into the ring,
// filter it, recompute the window's covariances and solve the restricted CCA per voxel, finish. Prints one JSON line
// per case: wall-clock median/p95 per TR, the per-kernel device time (KernelProfile), and the solve kernel's achieved
// read bandwidth (window x filters x voxels floats per TR). Data are random (the kernels' cost does not depend on
// the values: every voxel runs every subset).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <random>
#include <string>

#include "bench/bench_stats.hpp"
#include "core/device/kernel_profile.hpp"
#include "core/ring/device_ring_buffer.hpp"
#include "core/stats/cca.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string device;
  int warmup = 5;
  int runs = 60;
  int64_t window = 100;
  std::string filter;
  int vector_width = 0;
};

struct Case {
  std::array<int64_t, 3> dims;
  std::array<double, 3> voxel_mm;
  rtf::CcaFilters filters;
};

std::string name(rtf::CcaFilters f) {
  return f == rtf::CcaFilters::kPlanar ? "planar (isotropic + 3 in-plane)" : "volumetric (isotropic + 6)";
}

void bench_case(rtf::Device& dev, const Options& opt, const Case& c) {
  rtf::ImageHeader grid;
  grid.dims = c.dims;
  grid.voxel_mm = c.voxel_mm;
  grid.tr_s = 2.0;
  const int64_t nvox = grid.voxels_per_volume();
  rtf::CcaSpec spec;
  spec.filters = c.filters;
  spec.vector_width = opt.vector_width;
  rtf::SlidingCca cca(dev, grid, opt.window, rtf::CcaTemporalBasis::sine_cosine(30.0, grid.tr_s), spec);
  rtf::DeviceRingBuffer ring(dev, nvox, opt.window);
  rtf::DeviceBuffer<float> map(dev, static_cast<size_t>(nvox));

  // A few random volumes, cycled (baseline ~1000 plus noise).
  std::mt19937_64 rng(11);
  std::normal_distribution<float> noise(1000.0f, 20.0f);
  std::vector<std::vector<float>> volumes(7, std::vector<float>(static_cast<size_t>(nvox)));
  for (auto& v : volumes) {
    for (auto& x : v) x = noise(rng);
  }
  auto push = [&](int64_t t) {
    const auto& v = volumes[static_cast<size_t>(t) % volumes.size()];
    return ring.push(t, {reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(float)},
                     rtf::DataType::kFloat32);
  };
  int64_t t = 0;
  for (; t < opt.window - 1; ++t) push(t);  // fill the window without computing
  // The first call filters the whole window; then one new volume per TR.
  double first_call_ms = 0.0;
  for (int w = 0; w < std::max(opt.warmup, 1); ++w, ++t) {
    const auto t0 = Clock::now();
    rtf::ClEvent pushed = push(t);
    cca.enqueue(ring, map, {pushed.get()});
    RTF_CL_CHECK(clFinish(dev.queue()));
    if (w == 0) first_call_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }
  rtf::KernelProfile profile;
  cca.set_profile(&profile);
  std::vector<double> wall_ms;
  for (int r = 0; r < opt.runs; ++r, ++t) {
    const auto t0 = Clock::now();
    rtf::ClEvent pushed = push(t);
    cca.enqueue(ring, map, {pushed.get()});
    RTF_CL_CHECK(clFinish(dev.queue()));
    wall_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    profile.collect();
  }
  cca.set_profile(nullptr);
  const auto wall = rtf::bench::summarize(wall_ms);
  nlohmann::json stages = nlohmann::json::object();
  for (const auto& [stage, total] : profile.total_ms()) {
    stages[stage] = {{"ms_per_tr", total / static_cast<double>(wall.runs)},
                     {"launches_per_tr", profile.launches().at(stage) / static_cast<double>(wall.runs)}};
  }
  const double solve_bytes = static_cast<double>(opt.window) * cca.spatial_filters() * static_cast<double>(nvox) * 4.0;
  const double solve_ms =
      profile.total_ms().count("cca solve") ? profile.total_ms().at("cca solve") / static_cast<double>(wall.runs) : 0.0;
  rtf::bench::print_line({{"bench", "cca"},
                          {"size", fmt::format("{}x{}x{}", c.dims[0], c.dims[1], c.dims[2])},
                          {"voxel_mm", c.voxel_mm},
                          {"filters", name(c.filters)},
                          {"spatial_filters", cca.spatial_filters()},
                          {"temporal_columns", cca.temporal_columns()},
                          {"window", opt.window},
                          {"vector_width", cca.vector_width()},
                          {"device", dev.info().device_name},
                          {"median_ms", wall.median},
                          {"p95_ms", wall.p95},
                          {"min_ms", wall.min},
                          {"max_ms", *std::max_element(wall_ms.begin(), wall_ms.end())},
                          {"runs", wall.runs},
                          {"first_call_ms", first_call_ms},
                          {"solve_read_gbps", solve_ms > 0 ? solve_bytes / (solve_ms * 1e6) : 0.0},
                          {"device_ms_by_stage", stages}});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rtfmri sliding-window CCA benchmark: JSON lines on stdout"};
  Options opt;
  app.add_option("--device", opt.device, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--warmup", opt.warmup, "TRs before timing starts (the first filters the whole window)")
      ->check(CLI::PositiveNumber);
  app.add_option("--runs", opt.runs, "Timed TRs per case")->check(CLI::PositiveNumber);
  app.add_option("--window", opt.window, "Sliding window in volumes")->capture_default_str();
  app.add_option("--vector-width", opt.vector_width, "Voxels per work-item of the solve (0: the library's choice)")
      ->capture_default_str();
  app.add_option("--filter", opt.filter, "Only cases whose size or filter set contains this (e.g. 64x64, planar)");
  CLI11_PARSE(app, argc, argv);
  try {
    auto dev = rtf::Device::open(opt.device);
    const std::vector<Case> cases = {{{64, 64, 33}, {3.0, 3.0, 3.0}, rtf::CcaFilters::kPlanar},
                                     {{64, 64, 33}, {3.0, 3.0, 3.0}, rtf::CcaFilters::kVolumetric},
                                     {{104, 104, 72}, {2.0, 2.0, 2.0}, rtf::CcaFilters::kPlanar},
                                     {{104, 104, 72}, {2.0, 2.0, 2.0}, rtf::CcaFilters::kVolumetric}};
    for (const Case& c : cases) {
      const std::string label = fmt::format("{}x{}x{} {}", c.dims[0], c.dims[1], c.dims[2], name(c.filters));
      if (!opt.filter.empty() && label.find(opt.filter) == std::string::npos) continue;
      bench_case(*dev, opt, c);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cca: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
