// CLBlast against our correlation tiles (issue 16: "Pearson as a GEMM over normalised series: CLBlast or a kernel of
// our own, chosen by measurement"): times CLBlast's SSYRK (C = Z Zt, upper triangle: a diagonal block of the
// correlation matrix) and SGEMM (C = Z_I Z_Jt: an off-diagonal block) on an N x L block of random series, with the
// same multiply-add count convention as rtfmri-bench_connectome (upper triangle for SYRK, the whole block for GEMM).
// A GEMM route would then still write and re-read every r (8 bytes a pair) to threshold and compact the block, which
// the JSON states as the memory-traffic bound at the device's bandwidth given by --bandwidth (bytes/s).
// Prints one JSON line per routine: median and p95 of --runs runs after one untimed run.
#include <clblast.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_stats.hpp"
#include "core/device/buffer.hpp"
#include "core/device/device.hpp"

int main(int argc, char** argv) {
  std::string device_spec;
  int64_t nodes = 16384, length = 512;
  int runs = 5;
  double bandwidth = 3.35e12;  // H100 SXM HBM3
  CLI::App app("CLBlast SSYRK/SGEMM on one block of the correlation matrix, JSON lines");
  app.add_option("--device", device_spec, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--nodes", nodes, "N, the block's side")
      ->check(CLI::Range(int64_t{16}, int64_t{65536}))
      ->capture_default_str();
  app.add_option("--length", length, "L")->check(CLI::Range(int64_t{16}, int64_t{8192}))->capture_default_str();
  app.add_option("--runs", runs, "Timed runs")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--bandwidth", bandwidth, "Device memory bandwidth (bytes/s) for the threshold pass's bound")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    auto device = rtf::Device::open(device_spec);
    fmt::print(stderr, "clblast_gemm: device {}\n", device->info().label());
    cl_command_queue q = device->queue();
    const auto n = static_cast<size_t>(nodes), l = static_cast<size_t>(length);
    std::vector<float> z(n * l);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    for (float& x : z) x = normal(rng);
    rtf::DeviceBuffer<float> a(*device, n * l), b(*device, n * l), c(*device, n * n);
    a.write(q, z);
    b.write(q, z);
    for (const std::string routine : {"syrk", "gemm"}) {
      std::vector<double> seconds;
      for (int run = 0; run <= runs; ++run) {
        clFinish(q);
        const auto start = std::chrono::steady_clock::now();
        clblast::StatusCode status{};
        if (routine == "syrk") {
          status = clblast::Syrk<float>(clblast::Layout::kRowMajor, clblast::Triangle::kUpper, clblast::Transpose::kNo,
                                        n, l, 1.0f, a.get(), 0, l, 0.0f, c.get(), 0, n, &q, nullptr);
        } else {
          status = clblast::Gemm<float>(clblast::Layout::kRowMajor, clblast::Transpose::kNo, clblast::Transpose::kYes,
                                        n, n, l, 1.0f, a.get(), 0, l, b.get(), 0, l, 0.0f, c.get(), 0, n, &q, nullptr);
        }
        if (status != clblast::StatusCode::kSuccess) {
          throw std::runtime_error(fmt::format("CLBlast {}: status {}", routine, static_cast<int>(status)));
        }
        clFinish(q);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (run > 0) seconds.push_back(s);
      }
      const rtf::bench::Timing t = rtf::bench::summarize(seconds);
      const double pairs = routine == "syrk" ? static_cast<double>(n) * static_cast<double>(n + 1) / 2
                                             : static_cast<double>(n) * static_cast<double>(n);
      const double fma = pairs * static_cast<double>(l);
      rtf::bench::print_line({{"bench", "clblast_gemm"},
                              {"device", device->info().device_name},
                              {"routine", routine},
                              {"nodes", nodes},
                              {"length", length},
                              {"runs", t.runs},
                              {"median_s", t.median},
                              {"p95_s", t.p95},
                              {"multiply_adds", fma},
                              {"tfma_per_s", fma / t.median * 1e-12},
                              {"threshold_pass_bound_s", 8.0 * pairs / bandwidth}});
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "clblast_gemm: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
