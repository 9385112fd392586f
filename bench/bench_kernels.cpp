// Kernel benchmark driver: times each foundation kernel at 64x64x33 and 104x104x72 float volumes
// (single volumes and batches), median and p95 over repeated runs after warm-up, from OpenCL
// event profiling (device time) and host wall clock (enqueue to finish). Prints JSON lines with the
// achieved GB/s beside the device's measured copy bandwidth (bytes read + written).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <functional>
#include <string>

#include "bench/bench_stats.hpp"
#include "core/device/launch.hpp"
#include "core/filters/device_reduce.hpp"
#include "core/filters/gaussian_smoothing.hpp"
#include "core/ring/device_ring_buffer.hpp"
#include "core/temporal/detrend.hpp"
#include "core/temporal/slice_order.hpp"
#include "core/temporal/slice_timing.hpp"
#include "sim/random_image.hpp"

namespace {

using rtf::ClEvent;
using rtf::Device;
using rtf::DeviceBuffer;

struct Options {
  std::string device;
  int warmup = 5;
  int runs = 50;
  std::string filter;
};

struct Grid {
  std::array<int64_t, 3> dims;
  std::array<double, 3> voxel_mm;
  std::string name() const { return fmt::format("{}x{}x{}", dims[0], dims[1], dims[2]); }
  int64_t voxels() const { return dims[0] * dims[1] * dims[2]; }
};

// Runs `body` (which enqueues work and returns the event span [first, last]) warmup + runs times.
struct Measured {
  rtf::bench::Timing device_ms;
  rtf::bench::Timing wall_ms;
};

Measured measure(Device& dev, const Options& opt, const std::function<std::pair<ClEvent, ClEvent>()>& body) {
  std::vector<double> device_ms, wall_ms;
  for (int i = 0; i < opt.warmup + opt.runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto [first, last] = body();
    RTF_CL_CHECK(clFinish(dev.queue()));
    const auto t1 = std::chrono::steady_clock::now();
    if (i < opt.warmup) continue;
    cl_ulong start = 0, end = 0;
    RTF_CL_CHECK(clGetEventProfilingInfo(first.get(), CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr));
    RTF_CL_CHECK(clGetEventProfilingInfo(last.get(), CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr));
    device_ms.push_back(static_cast<double>(end - start) * 1e-6);
    wall_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return {rtf::bench::summarize(device_ms), rtf::bench::summarize(wall_ms)};
}

// Device-to-device copy bandwidth (bytes read + bytes written), the memory-bound ceiling.
double copy_bandwidth_gbs(Device& dev, const Options& opt) {
  const size_t bytes = std::min<size_t>(size_t{512} << 20, dev.info().max_alloc_bytes / 2);
  DeviceBuffer<uint8_t> a(dev, bytes), b(dev, bytes);
  a.fill(dev.queue(), uint8_t{1});
  auto m = measure(dev, opt, [&] {
    ClEvent e;
    RTF_CL_CHECK(clEnqueueCopyBuffer(dev.queue(), a.get(), b.get(), 0, 0, bytes, 0, nullptr, e.out()));
    ClEvent copy = e;
    return std::make_pair(std::move(e), std::move(copy));
  });
  const double gbs = 2.0 * static_cast<double>(bytes) / (m.device_ms.median * 1e-3) / 1e9;
  rtf::bench::print_line({{"bench", "copy"},
                          {"device", dev.info().device_name},
                          {"bytes", bytes},
                          {"median_ms", m.device_ms.median},
                          {"p95_ms", m.device_ms.p95},
                          {"runs", m.device_ms.runs},
                          {"gbs", gbs}});
  return gbs;
}

nlohmann::json base_line(const char* bench, const Grid& g, int64_t volumes, const Device& dev, const Measured& m,
                         double bytes, double copy_gbs) {
  const double gbs = bytes / (m.device_ms.median * 1e-3) / 1e9;
  return {{"bench", bench},
          {"size", g.name()},
          {"volumes", volumes},
          {"device", dev.info().device_name},
          {"median_ms", m.device_ms.median},
          {"p95_ms", m.device_ms.p95},
          {"min_ms", m.device_ms.min},
          {"wall_median_ms", m.wall_ms.median},
          {"wall_p95_ms", m.wall_ms.p95},
          {"runs", m.device_ms.runs},
          {"bytes", bytes},
          {"gbs", gbs},
          {"copy_gbs", copy_gbs},
          {"fraction_of_copy", gbs / copy_gbs}};
}

void bench_smoothing(Device& dev, const Options& opt, const Grid& g, int64_t volumes, double fwhm, double copy_gbs,
                     rtf::SmoothingPath path, std::optional<std::array<int, 3>> tile = std::nullopt) {
  auto img = rtf::sim::random_image({g.dims, volumes, g.voxel_mm, 1.0, 0.0f, 1000.0f, 42});
  rtf::GaussianSmoother smoother(dev, g.dims, g.voxel_mm,
                                 {.fwhm_mm = fwhm, .truncate_sigmas = 4.0, .path = path, .fused_tile = tile},
                                 std::nullopt, volumes);
  const auto n = static_cast<size_t>(g.voxels() * volumes);
  DeviceBuffer<float> in(dev, n), out(dev, n);
  in.write(dev.queue(), img.data());
  // Counted as three separable passes, each reading and writing every voxel once, whichever path runs
  // (the fused kernel does the same work while moving a third of those bytes through device memory).
  const double bytes = 3.0 * 2.0 * 4.0 * static_cast<double>(n);
  auto m = measure(dev, opt, [&] {
    ClEvent start;
    ClEvent last = smoother.enqueue(in, out, volumes, &start);
    return std::make_pair(std::move(start), std::move(last));
  });
  // Same-size copy (in -> out, the batch's bytes): the ceiling for inputs too small to hide fixed costs.
  auto copy = measure(dev, opt, [&] {
    ClEvent e;
    RTF_CL_CHECK(clEnqueueCopyBuffer(dev.queue(), in.get(), out.get(), 0, 0, in.bytes(), 0, nullptr, e.out()));
    ClEvent same = e;
    return std::make_pair(std::move(e), std::move(same));
  });
  auto line = base_line("smooth", g, volumes, dev, m, bytes, copy_gbs);
  const double same_size_copy_gbs = 2.0 * static_cast<double>(in.bytes()) / (copy.device_ms.median * 1e-3) / 1e9;
  line["same_size_copy_ms"] = copy.device_ms.median;
  line["same_size_copy_gbs"] = same_size_copy_gbs;
  line["fraction_of_same_size_copy"] = line["gbs"].get<double>() / same_size_copy_gbs;
  line["fwhm_mm"] = fwhm;
  line["path"] = smoother.fused() ? "fused" : "separable";
  if (smoother.fused()) line["tile"] = smoother.fused_tile();
  line["voxel_mm"] = g.voxel_mm;
  line["taps"] = {smoother.taps()[0].size(), smoother.taps()[1].size(), smoother.taps()[2].size()};
  // Per-pass device times of the separable path (median over runs): kernel time vs gaps between launches.
  std::array<std::vector<double>, 3> per_pass;
  for (int i = 0; i < opt.runs; ++i) {
    const auto p = smoother.profile_passes(in, out, volumes);
    for (int a = 0; a < 3; ++a) per_pass[a].push_back(p[a]);
  }
  line["pass_median_ms"] = {rtf::bench::summarize(per_pass[0]).median, rtf::bench::summarize(per_pass[1]).median,
                            rtf::bench::summarize(per_pass[2]).median};
  rtf::bench::print_line(line);
}

// Series kernels (slice timing, detrending): the fewest bytes are one read and one write of the series.
void bench_series(Device& dev, const Options& opt, const Grid& g, int64_t volumes, double copy_gbs) {
  auto img = rtf::sim::random_image({g.dims, volumes, g.voxel_mm, 1.0, 0.0f, 1000.0f, 7});
  const auto n = static_cast<size_t>(g.voxels() * volumes);
  DeviceBuffer<float> in(dev, n), out(dev, n);
  in.write(dev.queue(), img.data());
  const double bytes = 2.0 * 4.0 * static_cast<double>(n);
  const int nz = static_cast<int>(g.dims[2]);
  for (auto method : {rtf::Interpolation::kSinc, rtf::Interpolation::kCubic}) {
    rtf::SliceTimingSpec spec;
    spec.tr_s = 1.0;
    spec.slice_times_s = rtf::slice_times(rtf::SliceOrder::kInterleaved, nz, 1.0);
    spec.method = method;
    rtf::SliceTimingCorrector corrector(dev, g.dims, volumes, spec);
    auto m = measure(dev, opt, [&] {
      ClEvent e = corrector.enqueue(in, out);
      ClEvent same = e;
      return std::make_pair(std::move(e), std::move(same));
    });
    auto line = base_line("slicetime", g, volumes, dev, m, bytes, copy_gbs);
    line["method"] = rtf::to_string(method);
    line["taps"] = 2 * corrector.radius() + 1;
    rtf::bench::print_line(line);
  }
  for (int variant = 0; variant < 2; ++variant) {
    rtf::DetrendSpec spec;
    if (variant == 0)
      spec.poly_order = 3;
    else
      spec.highpass_cutoff_s = 32.0;  // TR 1 s
    rtf::Detrender detrender(dev, g.voxels(), volumes, 1.0, spec);
    auto m = measure(dev, opt, [&] {
      ClEvent e = detrender.enqueue(in, out);
      ClEvent same = e;
      return std::make_pair(std::move(e), std::move(same));
    });
    auto line = base_line("detrend", g, volumes, dev, m, bytes, copy_gbs);
    line["basis"] = variant == 0 ? "legendre-3" : "dct-32s";
    line["basis_columns"] = detrender.basis().cols();
    rtf::bench::print_line(line);
  }
}

// Ring-buffer upload latency: push of one int16 volume (host memcpy into pinned memory, transfer,
// conversion to float) until its event completes, wall clock. Window of 100 volumes.
void bench_ring_upload(Device& dev, const Options& opt, const Grid& g) {
  rtf::DeviceRingBuffer ring(dev, g.voxels(), 100);
  std::vector<std::byte> payload(static_cast<size_t>(g.voxels()) * 2);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>(i * 7);
  std::vector<double> wall;
  for (int i = 0; i < opt.warmup + opt.runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    ClEvent e = ring.push(i, payload, rtf::DataType::kInt16);
    cl_event raw = e.get();
    RTF_CL_CHECK(clWaitForEvents(1, &raw));
    if (i >= opt.warmup) {
      wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  const auto t = rtf::bench::summarize(wall);
  rtf::bench::print_line({{"bench", "ring_upload int16 (wall)"},
                          {"size", g.name()},
                          {"device", dev.info().device_name},
                          {"bytes", payload.size()},
                          {"median_ms", t.median},
                          {"p95_ms", t.p95},
                          {"runs", t.runs}});
}

void bench_sum(Device& dev, const Options& opt, const Grid& g, double copy_gbs) {
  rtf::DeviceSum summer(dev);
  const auto n = static_cast<size_t>(g.voxels());
  DeviceBuffer<float> in(dev, n);
  in.fill(dev.queue(), 1.0f);
  std::vector<double> wall;
  for (int i = 0; i < opt.warmup + opt.runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    volatile double s = summer.sum(in, n);
    (void)s;
    if (i >= opt.warmup)
      wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const auto t = rtf::bench::summarize(wall);
  rtf::bench::print_line({{"bench", "sum (wall, incl. readback)"},
                          {"size", g.name()},
                          {"device", dev.info().device_name},
                          {"median_ms", t.median},
                          {"p95_ms", t.p95},
                          {"runs", t.runs},
                          {"copy_gbs", copy_gbs}});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rtfmri kernel benchmarks: JSON lines on stdout"};
  Options opt;
  app.add_option("--device", opt.device, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--warmup", opt.warmup, "Warm-up runs")->check(CLI::NonNegativeNumber);
  app.add_option("--runs", opt.runs, "Timed runs (median and p95 over these)")->check(CLI::PositiveNumber);
  app.add_option("--filter", opt.filter, "Only benchmarks whose name contains this");
  bool large_batch = false;
  int64_t series_volumes = 100;
  app.add_option("--series-volumes", series_volumes, "Volumes per series for slice timing and detrending")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("--large-batch", large_batch, "Also run the 160-volume batch (BROCCOLI's 64x64x33x160 case)");
  CLI11_PARSE(app, argc, argv);

  try {
    auto dev = Device::open(opt.device);
    const bool want_all = opt.filter.empty();
    auto want = [&](const char* name) { return want_all || std::string(name).find(opt.filter) != std::string::npos; };
    const double copy_gbs = copy_bandwidth_gbs(*dev, opt);
    const Grid small{{64, 64, 33}, {3.0, 3.0, 3.0}};
    const Grid large{{104, 104, 72}, {2.0, 2.0, 2.0}};
    for (const Grid& g : {small, large}) {
      if (want("smooth")) {
        for (auto path : {rtf::SmoothingPath::kSeparablePasses, rtf::SmoothingPath::kFused}) {
          bench_smoothing(*dev, opt, g, 1, 6.0, copy_gbs, path);
          bench_smoothing(*dev, opt, g, 16, 6.0, copy_gbs, path);
        }
      }
      if (want("sum")) bench_sum(*dev, opt, g, copy_gbs);
      if (want("ring")) bench_ring_upload(*dev, opt, g);
      if (want("slicetime") || want("detrend")) bench_series(*dev, opt, g, series_volumes, copy_gbs);
    }
    if (want("tiles")) {  // fused-kernel tile sweep for one volume (tuning)
      for (const Grid& g : {small, large}) {
        for (std::array<int, 3> tile :
             {std::array<int, 3>{16, 8, 8}, std::array<int, 3>{8, 8, 8}, std::array<int, 3>{16, 8, 4},
              std::array<int, 3>{8, 8, 4}, std::array<int, 3>{16, 4, 4}, std::array<int, 3>{8, 4, 4}}) {
          try {
            bench_smoothing(*dev, opt, g, 1, 6.0, copy_gbs, rtf::SmoothingPath::kFused, tile);
          } catch (const std::invalid_argument&) {
          }
        }
      }
    }
    if (large_batch && want("smooth")) {
      for (auto path : {rtf::SmoothingPath::kSeparablePasses, rtf::SmoothingPath::kFused}) {
        bench_smoothing(*dev, opt, {{64, 64, 33}, {3.75, 3.75, 4.0}}, 160, 6.0, copy_gbs, path);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
