// GLM benchmark (issue 5): the per-TR cost of the cumulative GLM (add one volume, solve) and of the sliding-window GLM
// (re-accumulate W volumes from the ring, solve), and the offline GLM of a whole series, at 64x64x33 and 104x104x72
// with 12 design columns (four conditions, six motion confounds, a drift term, the constant), three t contrasts and
// one F contrast. Wall clock per update (host model, uploads, kernels, clFinish) with median/p95, and the device time
// per kernel from event profiling. JSON lines on stdout.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <random>
#include <string>

#include "bench/bench_design.hpp"
#include "bench/bench_stats.hpp"
#include "core/device/cl_error.hpp"
#include "core/glm/live_glm.hpp"
#include "core/glm/series_glm.hpp"
#include "sim/random_image.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string device;
  int warmup = 5;
  int runs = 100;
  int64_t window = 100;
  std::string filter;
};

struct Grid {
  std::array<int64_t, 3> dims;
  std::array<double, 3> voxel_mm;
  std::string name() const { return fmt::format("{}x{}x{}", dims[0], dims[1], dims[2]); }
  int64_t voxels() const { return dims[0] * dims[1] * dims[2]; }
};

nlohmann::json stages_per_update(const rtf::KernelProfile& profile, int updates) {
  nlohmann::json s = nlohmann::json::object();
  for (const auto& [stage, total] : profile.total_ms()) {
    s[stage] = {{"ms_per_update", total / updates},
                {"launches_per_update", profile.launches().at(stage) / double(updates)}};
  }
  return s;
}

template <typename Glm>
void bench_live(rtf::Device& dev, const Options& opt, const Grid& g, const char* name, Glm& glm, int64_t first_timed,
                const std::function<void(rtf::DeviceRingBuffer&, int64_t)>& update) {
  const int64_t volumes = first_timed + opt.runs;
  rtf::DeviceRingBuffer ring(dev, g.voxels(), std::max<int64_t>(opt.window + 2, 8));
  const auto img = rtf::sim::random_image({g.dims, 2, g.voxel_mm, 1.0, 900.0f, 1100.0f, 11});
  rtf::KernelProfile profile;
  std::vector<double> wall;
  for (int64_t t = 0; t < volumes; ++t) {
    const auto v = img.volume(t % 2);
    rtf::ClEvent up = ring.push(t, std::as_bytes(v), rtf::DataType::kFloat32);
    const cl_event e = up.get();
    RTF_CL_CHECK(clWaitForEvents(1, &e));
    const bool timed = t >= first_timed;
    glm.glm().set_profile(timed ? &profile : nullptr);
    const auto t0 = Clock::now();
    update(ring, t);
    RTF_CL_CHECK(clFinish(dev.queue()));
    if (timed) {
      wall.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      profile.collect();
    }
  }
  const auto w = rtf::bench::summarize(wall);
  rtf::bench::print_line({{"bench", name},
                          {"size", g.name()},
                          {"device", dev.info().device_name},
                          {"columns", 12},
                          {"window", opt.window},
                          {"median_ms", w.median},
                          {"p95_ms", w.p95},
                          {"max_ms", *std::max_element(wall.begin(), wall.end())},
                          {"runs", w.runs},
                          {"device_ms_by_stage", stages_per_update(profile, w.runs)}});
}

void bench_grid(rtf::Device& dev, const Options& opt, const Grid& g) {
  const int64_t volumes = opt.window + opt.warmup + opt.runs + 1;
  const rtf::DesignMatrix design =
      rtf::bench::bench_design(volumes, rtf::bench::bench_events(volumes), rtf::bench::BenchConfounds::kRandomWalk);
  const auto contrasts = rtf::bench::bench_contrasts(design);
  auto want = [&](const std::string& n) { return opt.filter.empty() || n.find(opt.filter) != std::string::npos; };
  if (want("glm cumulative")) {
    rtf::CumulativeGlm glm(dev, g.voxels(), {design, contrasts, 0.0, std::nullopt});
    // Timed after the window's worth of volumes, like the sliding GLM.
    bench_live(dev, opt, g, "glm cumulative (per TR)", glm, opt.window + opt.warmup,
               [&](rtf::DeviceRingBuffer& ring, int64_t t) { glm.update(ring, t); });
  }
  if (want("glm sliding")) {
    rtf::SlidingGlm glm(dev, g.voxels(), {design, contrasts, 0.0, std::nullopt}, opt.window, 1);
    bench_live(dev, opt, g, "glm sliding (per TR)", glm, opt.window + opt.warmup,
               [&](rtf::DeviceRingBuffer& ring, int64_t t) { glm.update(ring, t); });
  }
  if (want("glm series")) {
    const int64_t n = 200;
    auto img = rtf::sim::random_image({g.dims, n, g.voxel_mm, 1.0, 900.0f, 1100.0f, 5});
    const rtf::DesignMatrix d =
        rtf::bench::bench_design(n, rtf::bench::bench_events(n), rtf::bench::BenchConfounds::kRandomWalk);
    std::vector<double> wall;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = Clock::now();
      const auto r = rtf::fit_series_glm(dev, img, d, rtf::bench::bench_contrasts(d));
      wall.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    const auto w = rtf::bench::summarize(wall);
    rtf::bench::print_line({{"bench", "glm series (offline, uploads and read-back included)"},
                            {"size", g.name()},
                            {"volumes", n},
                            {"device", dev.info().device_name},
                            {"median_ms", w.median},
                            {"min_ms", w.min},
                            {"runs", w.runs}});
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rtfmri GLM benchmark: JSON lines on stdout"};
  Options opt;
  app.add_option("--device", opt.device, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--warmup", opt.warmup, "Updates before timing")->check(CLI::NonNegativeNumber);
  app.add_option("--runs", opt.runs, "Timed updates")->check(CLI::PositiveNumber);
  app.add_option("--window", opt.window, "Sliding window W")->check(CLI::Range(2, 100000))->capture_default_str();
  app.add_option("--filter", opt.filter, "Only benchmarks whose name contains this");
  CLI11_PARSE(app, argc, argv);
  try {
    auto dev = rtf::Device::open(opt.device);
    for (const Grid& g : {Grid{{64, 64, 33}, {3, 3, 3}}, Grid{{104, 104, 72}, {2, 2, 2}}}) bench_grid(*dev, opt, g);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_glm: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
