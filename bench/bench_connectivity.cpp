// Connectivity benchmark (issue 5): per-TR time of the live connectivity stage with the ring full: a seed correlation
// map (6 mm sphere) over a sliding window of W volumes and cumulatively, plus the ROI x ROI matrices (sliding and
// cumulative) of AAL's 116 regions resampled to the grid, at 64x64x33 (3 mm) and 104x104x72 (2 mm). Per TR, as the
// live stage does it: the volume is pushed into the ring (not timed), then RoiCorrelation::enqueue (ROI means and
// their read-back), SeedCorrelation::update (seed means, sliding and cumulative maps), RoiCorrelation::finish (the R x
// R matrices on the host, while the seed maps run), then the queue is finished. Prints one JSON line per grid:
// wall-clock median/p95 per TR (total; enqueueing; until the ROI matrices are ready),
// a per-kernel breakdown of device time (KernelProfile), the host matrix time, and the sliding map's achieved GB/s
// beside the device's copy bandwidth. --vector-width sets the seed map kernels' voxels per work-item (0: the device's
// preferred width; the line reports the width used as seed_vector_width).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <random>
#include <string>

#include "bench/bench_stats.hpp"
#include "core/connectivity/atlas.hpp"
#include "core/connectivity/roi_correlation.hpp"
#include "core/connectivity/seed.hpp"
#include "core/connectivity/seed_correlation.hpp"
#include "core/device/kernel_profile.hpp"
#include "core/device/launch.hpp"
#include "core/ring/device_ring_buffer.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string device;
  std::string data_dir = "build/data";
  int warmup = 10;
  int runs = 100;
  int64_t window = 100;
  double seed_radius_mm = 6.0;
  int vector_width = 0;  // seed map kernels: 0 = the device's preferred width
  std::string filter;
};

struct Case {
  std::string name;
  std::array<int64_t, 3> dims;
  double voxel_mm;
};

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A grid centred at MNI (0, -18, 18), RAS voxel order.
rtf::ImageHeader mni_grid(const Case& c) {
  rtf::ImageHeader h;
  h.dims = c.dims;
  h.voxel_mm = {c.voxel_mm, c.voxel_mm, c.voxel_mm};
  h.tr_s = 2.0;
  h.xform_code = 4;
  const Eigen::Vector3d centre(0.0, -18.0, 18.0);
  for (int d = 0; d < 3; ++d) {
    h.affine(d, d) = c.voxel_mm;
    h.affine(d, 3) = centre[d] - c.voxel_mm * 0.5 * static_cast<double>(c.dims[static_cast<size_t>(d)] - 1);
  }
  return h;
}

// AAL resampled to the grid, or (without the data) 116 synthetic block regions covering the grid's centre.
rtf::RoiSet atlas_for(const Options& opt, const rtf::ImageHeader& grid, std::string* source) {
  const std::filesystem::path dir(opt.data_dir);
  if (std::filesystem::exists(dir / rtf::kAalImage) && std::filesystem::exists(dir / rtf::kAalNames)) {
    *source = "AAL (mricron-data), nearest-neighbour resampled";
    return rtf::rois_on_grid(rtf::read_aal(dir), grid);
  }
  *source = "synthetic 116 blocks (AAL not found under --data)";
  rtf::ImageHeader h = grid;
  h.num_volumes = 1;
  rtf::Image labels(h, 0.0f);
  for (int64_t k = 0; k < h.dims[2]; ++k) {
    for (int64_t j = 0; j < h.dims[1]; ++j) {
      for (int64_t i = 0; i < h.dims[0]; ++i) {
        const int64_t bx = i * 4 / h.dims[0], by = j * 29 / h.dims[1];  // 4 x 29 = 116 columns of blocks
        if (k > h.dims[2] / 8 && k < h.dims[2] * 7 / 8) labels.at(i, j, k) = static_cast<float>(1 + bx + 4 * by);
      }
    }
  }
  return rtf::rois_on_grid(rtf::make_atlas(std::move(labels)), grid, rtf::AtlasPlacement::kSameGrid);
}

double copy_bandwidth_gbs(rtf::Device& dev) {
  const size_t bytes = std::min<size_t>(size_t{256} << 20, dev.info().max_alloc_bytes / 2);
  rtf::DeviceBuffer<uint8_t> a(dev, bytes), b(dev, bytes);
  a.fill(dev.queue(), uint8_t{1});
  std::vector<double> ms;
  for (int i = 0; i < 6; ++i) {
    rtf::ClEvent e;
    RTF_CL_CHECK(clEnqueueCopyBuffer(dev.queue(), a.get(), b.get(), 0, 0, bytes, 0, nullptr, e.out()));
    if (i > 0) ms.push_back(rtf::event_milliseconds(e));
  }
  return 2.0 * static_cast<double>(bytes) / (rtf::bench::summarize(ms).median * 1e-3) / 1e9;
}

void bench_case(rtf::Device& dev, const Options& opt, const Case& c, double copy_gbs) {
  const rtf::ImageHeader grid = mni_grid(c);
  const int64_t nvox = grid.voxels_per_volume();
  std::string atlas_source;
  const rtf::RoiSet rois = atlas_for(opt, grid, &atlas_source);
  const auto seed_voxels = rtf::seed_from_sphere(grid, Eigen::Vector3d(0.0, -52.0, 26.0), opt.seed_radius_mm);  // PCC
  const int64_t w = opt.window;
  rtf::DeviceRingBuffer ring(dev, nvox, w);
  const rtf::ConnectivityOptions options{.window = w, .vector_width = opt.vector_width};
  rtf::RoiCorrelation roi(dev, rois, w, options);
  rtf::SeedCorrelation seed(dev, grid, seed_voxels, w, options);

  // A few distinct random volumes (baseline 1000, noise 10), cycled: timing does not depend on the values.
  constexpr int kDistinct = 8;
  std::vector<std::vector<float>> volumes(kDistinct, std::vector<float>(static_cast<size_t>(nvox)));
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(1000.0f, 10.0f);
  for (auto& v : volumes) {
    for (float& x : v) x = normal(rng);
  }

  rtf::KernelProfile profile;
  std::vector<double> total_ms, roi_ms, seed_ms, host_ms, read_ms;
  std::vector<int64_t> slots;
  slots.reserve(static_cast<size_t>(w));
  const int64_t untimed = w + opt.warmup;  // fill the window first, then warm up
  for (int64_t t = 0; t < untimed + opt.runs; ++t) {
    const bool timed = t >= untimed;
    roi.set_profile(timed ? &profile : nullptr);
    seed.set_profile(timed ? &profile : nullptr);
    const rtf::ClEvent pushed = ring.push(
        t, std::as_bytes(std::span<const float>(volumes[static_cast<size_t>(t % kDistinct)])), rtf::DataType::kFloat32);
    cl_event e = pushed.get();
    RTF_CL_CHECK(clWaitForEvents(1, &e));
    rtf::ring_slots_in_time_order(ring, slots);
    // As a live stage would: all device work first, then the host matrices while the seed maps run.
    const auto t0 = Clock::now();
    roi.enqueue(ring.data(), slots, ring.slot_of(t));
    seed.update(ring.data(), slots, ring.slot_of(t));
    const double enqueued = ms_since(t0);
    roi.finish();
    const double roi_done = ms_since(t0);
    RTF_CL_CHECK(clFinish(dev.queue()));
    if (!timed) continue;
    total_ms.push_back(ms_since(t0));
    roi_ms.push_back(roi_done);
    seed_ms.push_back(enqueued);
    host_ms.push_back(roi.last_host_ms());
    read_ms.push_back(roi.last_read_ms());
    profile.collect();
  }
  const auto total = rtf::bench::summarize(total_ms);
  nlohmann::json stages = nlohmann::json::object();
  for (const auto& [stage, sum] : profile.total_ms()) {
    stages[stage] = {{"ms_per_tr", sum / total.runs},
                     {"launches_per_tr", profile.launches().at(stage) / static_cast<double>(total.runs)}};
  }
  // The sliding map reads W volumes and writes r and z; the cumulative map reads a volume and 14 state planes and
  // writes 14 planes (at most) and r and z.
  const double sliding_bytes = static_cast<double>(nvox) * 4.0 * static_cast<double>(w + 2);
  const double cumulative_bytes = static_cast<double>(nvox) * 4.0 * (1 + 14 + 14 + 2);
  nlohmann::json bandwidth = nlohmann::json::object();
  if (stages.contains("seed sliding map")) {
    const double gbs = sliding_bytes / (stages["seed sliding map"]["ms_per_tr"].get<double>() * 1e-3) / 1e9;
    bandwidth["seed sliding map"] = {{"gbs", gbs}, {"fraction_of_copy", gbs / copy_gbs}};
  }
  if (stages.contains("seed cumulative map")) {
    const double gbs = cumulative_bytes / (stages["seed cumulative map"]["ms_per_tr"].get<double>() * 1e-3) / 1e9;
    bandwidth["seed cumulative map"] = {{"gbs", gbs}, {"fraction_of_copy", gbs / copy_gbs}};
  }
  rtf::bench::print_line({{"bench", "connectivity"},
                          {"case", c.name},
                          {"size", fmt::format("{}x{}x{}", c.dims[0], c.dims[1], c.dims[2])},
                          {"voxel_mm", c.voxel_mm},
                          {"device", dev.info().device_name},
                          {"window", w},
                          {"rois", rois.size()},
                          {"rois_present", rois.present()},
                          {"rois_missing", rois.missing()},
                          {"atlas", atlas_source},
                          {"seed_voxels", seed_voxels.size()},
                          {"seed_vector_width", seed.vector_width()},
                          {"median_ms", total.median},
                          {"p95_ms", total.p95},
                          {"min_ms", total.min},
                          {"runs", total.runs},
                          {"enqueue_median_ms", rtf::bench::summarize(seed_ms).median},
                          {"roi_matrices_ready_median_ms", rtf::bench::summarize(roi_ms).median},
                          {"roi_matrices_ready_p95_ms", rtf::bench::summarize(roi_ms).p95},
                          {"roi_host_matrices_median_ms", rtf::bench::summarize(host_ms).median},
                          {"roi_read_wait_median_ms", rtf::bench::summarize(read_ms).median},
                          {"device_ms_by_stage", stages},
                          {"copy_gbs", copy_gbs},
                          {"bandwidth", bandwidth}});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rtfmri connectivity benchmark: JSON lines on stdout"};
  Options opt;
  app.add_option("--device", opt.device, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--data", opt.data_dir, "Data directory holding mricron/aal.nii.gz (scripts/fetch-data.sh)")
      ->capture_default_str();
  app.add_option("--warmup", opt.warmup, "TRs run after the window has filled, before timing")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--runs", opt.runs, "Timed TRs per grid")->check(CLI::PositiveNumber);
  app.add_option("--window", opt.window, "Sliding window W (volumes)")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  app.add_option("--seed-radius", opt.seed_radius_mm, "Seed sphere radius (mm)")->capture_default_str();
  app.add_option("--vector-width", opt.vector_width,
                 "Voxels per work-item of the seed map kernels (0: the device's preferred width; 1, 2, 4, 8, 16)")
      ->check(CLI::IsMember({0, 1, 2, 4, 8, 16}))
      ->capture_default_str();
  app.add_option("--filter", opt.filter, "Only grids whose name contains this");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::err);  // stdout carries JSON lines only; missing regions are in the lines
  try {
    auto dev = rtf::Device::open(opt.device);
    const double copy_gbs = copy_bandwidth_gbs(*dev);
    const std::vector<Case> cases{{"live 3 mm", {64, 64, 33}, 3.0}, {"live 2 mm", {104, 104, 72}, 2.0}};
    for (const Case& c : cases) {
      const std::string label = fmt::format("{} {}x{}x{}", c.name, c.dims[0], c.dims[1], c.dims[2]);
      if (!opt.filter.empty() && label.find(opt.filter) == std::string::npos) continue;
      bench_case(*dev, opt, c, copy_gbs);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_connectivity: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
