// run_randomise: the options checked, the devices opened while the inputs are read, the rearrangements made, every
// contrast permuted on every rank, then rank 0's outputs and report.
#include "core/permutation/randomise.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "core/io/atomic_file.hpp"
#include "core/permutation/randomise_contrast.hpp"
#include "core/permutation/randomise_inputs.hpp"
#include "core/permutation/randomise_outputs.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {

namespace {

PermutationSet rearrangements(const RandomiseOptions& o, const RandomiseInputs& in) {
  const auto kind = o.one_sample ? PermutationKind::kSignFlip : PermutationKind::kPermute;
  PermutationSet set = make_permutation_set(kind, in.subjects, o.permutations, o.seed, in.blocks, &in.design);
  spdlog::info("{} subjects, {} voxels, {} contrast(s); {} {}{}", in.subjects, in.voxels.size(),
               std::count_if(in.models.begin(), in.models.end(), [](const TContrastModel& m) { return !m.is_f(); }),
               set.count, o.one_sample ? "sign flips" : "permutations",
               set.exhaustive ? fmt::format(" (exhaustive: all {:.0f} distinct ones, fewer than -n {})", set.distinct,
                                            o.permutations)
                              : fmt::format(" (random, seed {}, of {:.3g} distinct)", o.seed, set.distinct));
  return set;
}

// The cluster and TFCE statistics' neighbour tables (of the options that use them), made once for every device.
SlotStatistics slot_statistics(const RandomiseOptions& o, const RandomiseInputs& in, ScaleOut& scale) {
  std::vector<uint8_t> inside(static_cast<size_t>(in.grid.voxels_per_volume()), 0);
  for (int64_t v : in.voxels) inside[static_cast<size_t>(v)] = 1;
  const bool clusters = !std::isnan(o.cluster_extent) || !std::isnan(o.cluster_mass);
  MaskNeighbours cluster_table = clusters ? ClusterStatistics::neighbours(in.grid.dims, inside, 26) : MaskNeighbours{};
  MaskNeighbours tfce_table =
      o.tfce || o.tfce_2d ? TfceStatistics::neighbours(in.grid.dims, inside, o.tfce_c) : MaskNeighbours{};
  return {scale.workers(), std::move(cluster_table), std::move(tfce_table), o.tfce_2d ? 1.0 : o.tfce_e, o.tfce_h};
}

}  // namespace

void run_randomise(const RandomiseOptions& o, const DeviceChoice& devices) {
  const Stopwatch clock;
  check_randomise_options(o);
  ScaleOut scale(devices);  // the devices open while the inputs are read
  const RandomiseInputs in = read_randomise_inputs(o, scale);
  const PermutationSet set = rearrangements(o, in);
  SlotStatistics statistics = slot_statistics(o, in, scale);
  const std::string chunk_root = o.output + "_chunks";
  // Every contrast's permutations first (on every rank), then rank 0 writes every output: a run stopped midway leaves
  // its chunk files and no output.
  std::vector<ContrastResult> results;
  for (size_t k = 0; k < in.models.size(); ++k) {
    results.push_back(permute_contrast(scale, o, in, set, statistics, k, chunk_root));
  }
  if (!scale.root()) return;  // rank 0 writes everything
  io::OutputSet outputs;      // every file under its final name only when all are written
  nlohmann::json report = {{"subjects", in.subjects},
                           {"voxels", in.voxels.size()},
                           {"rearrangements", set.count},
                           {"exhaustive", set.exhaustive},
                           {"distinct", set.distinct},
                           {"kind", o.one_sample ? "sign-flip" : "permutation"},
                           {"seed", o.seed},
                           {"devices", scale.workers().total_devices()},
                           {"ranks", scale.ranks().size()},
                           {"contrasts", nlohmann::json::array()}};
  for (size_t k = 0; k < in.models.size(); ++k) {
    report["contrasts"].push_back(write_contrast_outputs(outputs, o, in, results[k], statistics, k));
  }
  report["seconds"] = clock.seconds();
  write_text_atomically(outputs.add(o.output + "_randomise.json"), report.dump(2) + "\n");
  scale.commit(outputs, chunk_root);
  spdlog::info("randomise: {} contrast(s) -> {}_* ({:.2f} s)", in.models.size(), o.output, clock.seconds());
}

}  // namespace rtf
