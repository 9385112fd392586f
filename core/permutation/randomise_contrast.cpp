// A randomise contrast: its residuals, each device slot's blocks and statistics prepared in the background while rank
// 0's first device computes the observed statistic, then its chunks as a job keyed by everything its results depend on.
#include "core/permutation/randomise_contrast.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <stdexcept>

#include "core/scale/broadcast.hpp"
#include "core/scale/job_key.hpp"
#include "core/util/progress_log.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {

SlotStatistics::SlotStatistics(Workers& workers, MaskNeighbours clusters, MaskNeighbours tfce, double tfce_e,
                               double tfce_h)
    : workers_(workers),
      cluster_table_(std::move(clusters)),
      tfce_table_(std::move(tfce)),
      tfce_e_(tfce_e),
      tfce_h_(tfce_h),
      clusters_(static_cast<size_t>(workers.device_count())),
      tfces_(static_cast<size_t>(workers.device_count())) {}

ClusterStatistics& SlotStatistics::clusters(int slot) {
  auto& c = clusters_.at(static_cast<size_t>(slot));
  if (!c) c = std::make_unique<ClusterStatistics>(workers_.device(slot), cluster_table_, kRandomiseMapBatch);
  return *c;
}

TfceStatistics& SlotStatistics::tfce(int slot) {
  auto& t = tfces_.at(static_cast<size_t>(slot));
  if (!t)
    t = std::make_unique<TfceStatistics>(workers_.device(slot), tfce_table_, kRandomiseMapBatch, tfce_e_, tfce_h_);
  return *t;
}

namespace {

// What a contrast's chunk results depend on: the residuals, the model, the rearrangements, the options and the
// chunking. Chunk files of another key are not reused.
std::string randomise_job_key(const std::vector<float>& residuals, const TContrastModel& model,
                              const PermutationSet& set, const PermutationChunkOptions& options,
                              const RandomiseOptions& args, size_t contrast, int max_block) {
  const std::string settings = fmt::format(
      "randomise chunks v2; n {} p {} q {} dof {:a} vf {:a}; set {} kind {} count {} seed {}; -c {:a} -C {:a}; "
      "tfce dh {:a} E {:a} H {:a} C {} 2d {}; chunks {} then {} launch {}; contrast {}",
      model.n, model.p, model.q, model.dof, model.variance_factor, set.n, static_cast<int>(set.kind), set.count,
      args.seed, options.cluster_extent, options.cluster_mass, static_cast<double>(options.tfce_dh), args.tfce_e,
      args.tfce_h, args.tfce_c, args.tfce_2d, kPermutationChunkSize, kPermutationTailChunkSize, max_block, contrast);
  return job_key(settings, {bytes_of(residuals), bytes_of(model.basis), bytes_of(model.a), bytes_of(model.quadratic),
                            bytes_of(set.order), bytes_of(set.signs)});
}

// Everything one contrast's chunks share.
struct ContrastChunks {
  const TContrastModel& model;
  const PermutationSet& set;
  const std::vector<float>& residuals;
  size_t voxels = 0;
  PermutationChunkOptions options;
  bool tfce = false;  // TFCE maxima (a t contrast with -T)
  int max_block = 128;
};

// Every device slot's blocks (slot 0's are the observer's, set later) and statistics, made in the background: a chunk
// waits only for its own slot's.
std::vector<std::future<void>> prepare_slots(Workers& workers, const ContrastChunks& c, SlotStatistics& statistics,
                                             std::vector<std::unique_ptr<VoxelPermutationBlocks>>& blocks, size_t k) {
  std::vector<std::future<void>> preparing(static_cast<size_t>(workers.device_count()));
  for (int slot = 0; slot < workers.device_count(); ++slot) {
    preparing[static_cast<size_t>(slot)] =
        std::async(std::launch::async, [&workers, &c, &statistics, &blocks, k, slot] {
          const Stopwatch setup_clock;
          if (slot > 0) {
            blocks[static_cast<size_t>(slot)] = std::make_unique<VoxelPermutationBlocks>(
                workers.device(slot), c.model, c.set, c.residuals, c.voxels, c.max_block);
          }
          const double blocks_s = setup_clock.seconds();
          if (c.options.clusters()) statistics.clusters(slot);
          const double clusters_s = setup_clock.seconds();
          if (c.tfce) statistics.tfce(slot);
          spdlog::debug(
              "randomise contrast {}: device slot {} ready in {:.3f} s (blocks {:.3f}, clusters {:.3f}, TFCE {:.3f})",
              k + 1, slot, setup_clock.seconds(), blocks_s, clusters_s - blocks_s, setup_clock.seconds() - clusters_s);
        });
  }
  return preparing;
}

}  // namespace

ContrastResult permute_contrast(ScaleOut& scale, const RandomiseOptions& args, const RandomiseInputs& in,
                                const PermutationSet& set, SlotStatistics& statistics, size_t k,
                                const std::string& chunk_root) {
  Workers& workers = scale.workers();
  ContrastResult result;
  const Stopwatch contrast_clock;
  const TContrastModel& model = in.models[k];
  // The data less the contrast's nuisance (a copy only where there is nuisance to remove: -1 tests the data).
  std::vector<float> without_nuisance;
  if (model.nuisance_rank > 0) {
    without_nuisance = in.values;
    remove_nuisance(model, without_nuisance, in.voxels.size());
  }
  const bool f_test = model.is_f();
  ContrastChunks c{model, set, model.nuisance_rank > 0 ? without_nuisance : in.values, in.voxels.size(), {},
                   false, 128};
  // Cluster and TFCE inference (t contrasts): each launch's t maps are labelled on the device; per rearrangement the
  // largest extent / mass / TFCE.
  if (!f_test) {
    c.options.cluster_extent = args.cluster_extent;
    c.options.cluster_mass = args.cluster_mass;
  }
  const bool want_tfce = args.tfce || args.tfce_2d;
  c.tfce = want_tfce && !f_test;
  c.max_block = c.options.clusters() || c.tfce ? kRandomiseMapBatch : 128;
  const bool permute = args.voxelwise || c.options.clusters() || c.tfce;
  std::vector<std::unique_ptr<VoxelPermutationBlocks>> slot_blocks(static_cast<size_t>(workers.device_count()));
  std::vector<std::future<void>> preparing;
  if (permute) preparing = prepare_slots(workers, c, statistics, slot_blocks, k);
  // The observed statistic: rank 0's, on its first device, so every device of every rank counts against the same.
  const Stopwatch observe_clock;
  auto observer =
      std::make_unique<VoxelPermutationBlocks>(workers.device(0), model, set, c.residuals, c.voxels, c.max_block);
  std::vector<double> observed = observer->observe();
  spdlog::debug("randomise contrast {}: observed statistic in {:.3f} s", k + 1, observe_clock.seconds());
  broadcast_values(scale.ranks(), observed);
  result.t.assign(observed.begin(), observed.end());
  // TFCE's step: the observed map's largest t / 100 (at least 0.01).
  if (want_tfce && !f_test)
    c.options.tfce_dh = std::max(*std::max_element(result.t.begin(), result.t.end()), 1.0f) / 100.0f;
  result.dh = c.options.tfce_dh;
  if (permute) {
    observer->set_observed(observed);
    slot_blocks[0] = std::move(observer);
    ChunkJob job;
    job.name = fmt::format("randomise contrast {}", k + 1);
    job.chunks = permutation_chunk_count(set.count);
    job.key = randomise_job_key(c.residuals, model, set, c.options, args, k, c.max_block);
    job.chunk_dir = std::filesystem::path(chunk_root) / in.suffixes[k];
    job.compute = [&](Device&, int slot, int64_t chunk) {
      auto& ready = preparing[static_cast<size_t>(slot)];
      auto& b = slot_blocks[static_cast<size_t>(slot)];
      if (ready.valid()) {  // the slot's first chunk: its blocks and statistics (a failure there fails the chunk)
        ready.get();
        if (slot > 0) b->set_observed(observed);
      }
      if (!b) throw std::runtime_error(fmt::format("device slot {} could not be prepared", slot));
      return to_chunk_bytes(run_permutation_chunk(*b, c.options.clusters() ? &statistics.clusters(slot) : nullptr,
                                                  c.options.tfce() ? &statistics.tfce(slot) : nullptr, c.options,
                                                  permutation_chunk_range(chunk, set.count)));
    };
    ProgressLog log(fmt::format("contrast {} ({}): chunks of {} then {} rearrangements", k + 1, in.names[k],
                                kPermutationChunkSize, kPermutationTailChunkSize));
    for (const ChunkBytes& bytes : scale.run(job, std::ref(log))) {
      merge_permutation_chunk(result.permutations, permutation_chunk_from_bytes(bytes));
    }
  }
  result.permuted = permute;
  result.seconds = contrast_clock.seconds();
  return result;
}

}  // namespace rtf
