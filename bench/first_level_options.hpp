// The command-line options shared by the first-level permutation benchmarks (bench_glm_permutation and
// bench_glm_permutation_fwe): the device, the grid and the run's length, and the analysis as `rtfmri glm --noise arP
// --permutations N` runs it (AR order and fits, smoothing of the AR maps and of the data, rearrangements, batch).
#pragma once

#include <CLI/CLI.hpp>
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/permutation/first_level_permutation.hpp"

namespace rtf::bench {

struct FirstLevelBenchOptions {
  std::string device_spec{};
  std::vector<int64_t> dims{};  // x, y, z
  int64_t volumes = 80;
  int permutations = 1000;
  int order = 4;
  int iterations = 3;
  double ar_fwhm = 6.0, fwhm = 6.0;
  std::string permute_mode = "permute";
  int batch = 16;

  std::array<int64_t, 3> grid() const { return {dims[0], dims[1], dims[2]}; }

  // As the JSON line reports them: dims, volumes, permute_mode, order, iterations, ar_fwhm, fwhm.
  nlohmann::json json() const {
    return {{"dims", dims},   {"volumes", volumes},       {"permute_mode", permute_mode},
            {"order", order}, {"iterations", iterations}, {"ar_fwhm", ar_fwhm},
            {"fwhm", fwhm}};
  }

  // The analysis these options ask for; the seed and the inference (cluster, TFCE) are the caller's.
  FirstLevelPermutationOptions permutation_options() const {
    FirstLevelPermutationOptions options;
    options.ar = {.order = order, .iterations = iterations, .ar_fwhm_mm = ar_fwhm};
    options.fwhm_mm = fwhm;
    options.kind = permute_mode == "signflip" ? PermutationKind::kSignFlip : PermutationKind::kPermute;
    options.permutations = permutations;
    options.max_batch = batch;
    return options;
  }
};

// --device, --dims, --volumes, --permutations, --order (1..max_order), --ar-iterations, --ar-fwhm, --fwhm,
// --permute-mode and --batch, their defaults the values `o` holds now.
inline void add_first_level_options(CLI::App& app, FirstLevelBenchOptions& o, int max_order) {
  app.add_option("--device", o.device_spec, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--dims", o.dims, "Grid size x,y,z (3 mm voxels)")
      ->expected(3)
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--volumes", o.volumes, "Volumes (TR 2 s)")
      ->check(CLI::Range(int64_t{8}, int64_t{100000}))
      ->capture_default_str();
  app.add_option("--permutations", o.permutations, "Rearrangements, the observed one included")
      ->check(CLI::Range(2, 100000000))
      ->capture_default_str();
  app.add_option("--order", o.order, "AR order P")->check(CLI::Range(1, max_order))->capture_default_str();
  app.add_option("--ar-iterations", o.iterations, "Cochrane-Orcutt fits")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--ar-fwhm", o.ar_fwhm, "Smoothing of the AR maps, mm (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--fwhm", o.fwhm, "Smoothing of the data and of every surrogate, mm (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--permute-mode", o.permute_mode, "Permute the whitened residuals' time points, or flip their signs")
      ->check(CLI::IsMember({"permute", "signflip"}))
      ->capture_default_str();
  app.add_option("--batch", o.batch, "Surrogates per launch")->check(CLI::Range(1, 4096))->capture_default_str();
}

}  // namespace rtf::bench
