// Per-TR statistics benchmark (issue 5): everything the live path computes per TR after motion correction, in the
// order a TR runs it, at 64x64x33 (3 mm) and 104x104x72 (2 mm): the ROI means of AAL's 116 regions (read back),
// the cumulative and the sliding-window GLM (12 columns, W = 100), sliding-window CCA (W = 100), the seed correlation
// map (sliding and cumulative), the ROI x ROI matrices, and the neurofeedback value (host). Wall clock per TR from the
// newest volume being in the ring until every result is ready (clFinish), median/p95/max, plus the device time per
// kernel from event profiling. JSON lines on stdout.
#include "bench/bench_stats.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <random>
#include <string>

#include "bench/bench_design.hpp"
#include "core/connectivity/atlas.hpp"
#include "core/connectivity/roi_correlation.hpp"
#include "core/connectivity/seed.hpp"
#include "core/connectivity/seed_correlation.hpp"
#include "core/device/cl_error.hpp"
#include "core/feedback/feedback_run.hpp"
#include "core/glm/live_glm.hpp"
#include "core/stats/cca.hpp"
#include "sim/random_image.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string device;
  std::string data_dir = "build/data";
  int warmup = 10;
  int runs = 100;
  int64_t window = 100;
};

struct Grid {
  std::array<int64_t, 3> dims;
  double voxel_mm;
  std::string name() const { return fmt::format("{}x{}x{}", dims[0], dims[1], dims[2]); }
  int64_t voxels() const { return dims[0] * dims[1] * dims[2]; }
};

rtf::ImageHeader header_of(const Grid& g) {
  rtf::ImageHeader h;
  h.dims = g.dims;
  h.voxel_mm = {g.voxel_mm, g.voxel_mm, g.voxel_mm};
  h.affine = Eigen::Matrix4d::Identity();
  for (int a = 0; a < 3; ++a) {
    h.affine(a, a) = g.voxel_mm;
    h.affine(a, 3) = -0.5 * static_cast<double>(g.dims[static_cast<size_t>(a)] - 1) * g.voxel_mm;  // centred on 0
  }
  h.affine(2, 3) += 10.0;  // the slab a little above the AC, like an axial EPI
  return h;
}

void bench_grid(rtf::Device& dev, const Options& opt, const Grid& g, const rtf::LabelAtlas& aal) {
  const rtf::ImageHeader h = header_of(g);
  const int64_t volumes = opt.window + opt.warmup + opt.runs;
  const std::vector<rtf::Event> events = rtf::bench::bench_events(volumes);
  const rtf::DesignMatrix design = rtf::bench::bench_design(volumes, events, rtf::bench::BenchConfounds::kZero);
  const auto contrasts = rtf::bench::bench_contrasts(design);
  const int64_t ring_capacity = opt.window + 4;
  rtf::DeviceRingBuffer ring(dev, g.voxels(), ring_capacity);
  rtf::ConnectivityOptions copt;
  copt.window = opt.window;
  const rtf::RoiSet rois = rtf::rois_on_grid(aal, h);
  rtf::RoiCorrelation roi_corr(dev, rois, ring_capacity, copt);
  const auto seed = rtf::seed_from_sphere(h, Eigen::Vector3d(-38, -22, 56), 6.0);
  rtf::SeedCorrelation seed_corr(dev, h, seed, ring_capacity, copt);
  rtf::CumulativeGlm cumulative(dev, g.voxels(), {design, contrasts, 0.0, std::nullopt, 1.0, 128.0});
  rtf::SlidingGlm sliding(dev, g.voxels(), {design, contrasts, 0.0, std::nullopt}, opt.window, 1);
  rtf::SlidingCca cca(dev, h, opt.window, rtf::CcaTemporalBasis::sine_cosine(40.0, 1.0));
  rtf::DeviceBuffer<float> cca_map(dev, static_cast<size_t>(g.voxels()));
  rtf::FeedbackConfig fb;
  fb.tr_s = 1.0;
  fb.n_volumes = volumes;
  fb.n_rois = rois.size();
  fb.rois = {0};
  fb.baseline_condition = "";
  rtf::FeedbackRun feedback(fb, events);

  const auto img = rtf::sim::random_image({g.dims, 8, h.voxel_mm, 1.0, 900.0f, 1100.0f, 11});
  rtf::KernelProfile profile;
  for (auto* p : {&cumulative.glm(), &sliding.glm()}) p->set_profile(&profile);
  cca.set_profile(&profile);
  seed_corr.set_profile(&profile);
  roi_corr.set_profile(&profile);
  std::vector<double> wall;
  std::vector<int64_t> slots;
  std::mt19937 rng(2);
  std::normal_distribution<double> normal;
  for (int64_t t = 0; t < volumes; ++t) {
    const auto v = img.volume(t % 8);
    rtf::ClEvent up = ring.push(t, std::as_bytes(v), rtf::DataType::kFloat32);
    const cl_event e = up.get();
    RTF_CL_CHECK(clWaitForEvents(1, &e));
    const auto t0 = Clock::now();
    rtf::ring_slots_in_time_order(ring, slots);
    const int64_t newest = ring.slot_of(t);
    roi_corr.enqueue(ring.data(), slots, newest);  // ROI means first: the feedback value needs them soonest
    std::array<double, 6> motion{};
    for (double& m : motion) m = 0.1 * normal(rng);
    cumulative.set_confounds(t, motion);
    sliding.set_confounds(t, motion);
    cumulative.update(ring, t);
    sliding.update(ring, t);
    if (t + 1 >= cca.minimum_volumes()) cca.enqueue(ring, cca_map);
    seed_corr.update(ring.data(), slots, newest);
    roi_corr.finish();
    const rtf::FeedbackSample sample = feedback.process(t, roi_corr.newest_means(), motion);
    (void)sample;
    RTF_CL_CHECK(clFinish(dev.queue()));
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (t >= opt.window + opt.warmup) {
      wall.push_back(ms);
      profile.collect();
    } else {
      profile.collect();
      profile.reset();
    }
  }
  const auto w = rtf::bench::summarize(wall);
  nlohmann::json stages = nlohmann::json::object();
  for (const auto& [stage, total] : profile.total_ms()) {
    stages[stage] = {{"ms_per_tr", total / w.runs}, {"launches_per_tr", profile.launches().at(stage) / double(w.runs)}};
  }
  rtf::bench::print_line({{"bench", "statistics per TR"},
                          {"size", g.name()},
                          {"device", dev.info().device_name},
                          {"window", opt.window},
                          {"glm_columns", design.x.cols()},
                          {"rois", rois.size()},
                          {"rois_missing", rois.missing().size()},
                          {"median_ms", w.median},
                          {"p95_ms", w.p95},
                          {"max_ms", *std::max_element(wall.begin(), wall.end())},
                          {"runs", w.runs},
                          {"device_ms_by_stage", stages}});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rtfmri per-TR statistics benchmark: JSON lines on stdout"};
  Options opt;
  app.add_option("--device", opt.device, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--data", opt.data_dir, "Directory with mricron/aal.nii.gz (scripts/fetch-data.sh)")
      ->capture_default_str();
  app.add_option("--warmup", opt.warmup, "TRs after the window fills before timing")->check(CLI::NonNegativeNumber);
  app.add_option("--runs", opt.runs, "Timed TRs")->check(CLI::PositiveNumber);
  app.add_option("--window", opt.window, "Sliding window W")->check(CLI::Range(20, 100000))->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    auto dev = rtf::Device::open(opt.device);
    const rtf::LabelAtlas aal = rtf::read_aal(opt.data_dir);
    for (const Grid& g : {Grid{{64, 64, 33}, 3.0}, Grid{{104, 104, 72}, 2.0}}) bench_grid(*dev, opt, g, aal);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_stats: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
