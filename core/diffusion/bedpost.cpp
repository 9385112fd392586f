// run_bedpost: options checked, the devices opened while the folder is read, the blocks run as one spread job keyed by
// the signals, scheme and options, then rank 0 joins them, writes FSL's maps and bedpost.json into OUT.partial and
// renames it.
#include "core/diffusion/bedpost.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/diffusion/bedpost_blocks.hpp"
#include "core/diffusion/bedpost_folder.hpp"
#include "core/diffusion/bedpost_outputs.hpp"
#include "core/diffusion/fibre_order.hpp"
#include "core/io/atomic_file.hpp"
#include "core/scale/job_key.hpp"
#include "core/scale/scale_out.hpp"
#include "core/util/progress_log.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {

namespace fs = std::filesystem;

namespace {

void check_bedpost_options(const BedpostOptions& args, const fs::path& out, bool root) {
  const BallStickOptions& o = args.chains;
  if (root && fs::exists(out)) {
    throw std::invalid_argument(
        fmt::format("{} exists: remove it or choose another --out (bedpost never overwrites results)", out.string()));
  }
  if (o.fibres < 1 || o.fibres > kBallStickMaxFibres) {
    throw std::invalid_argument(fmt::format("-n {}: 1 to {} fibres", o.fibres, kBallStickMaxFibres));
  }
  if (!(o.ard_weight >= 0.0) || o.update_proposal_every < 1) {
    throw std::invalid_argument(
        fmt::format("-w {} (>= 0), --updateproposalevery {} (>= 1)", o.ard_weight, o.update_proposal_every));
  }
  if (o.jumps < o.sample_every || o.sample_every < 1 || o.burn_in < 0) {
    throw std::invalid_argument(fmt::format("-b {} -j {} -s {}: burn-in >= 0 and jumps >= sample-every >= 1", o.burn_in,
                                            o.jumps, o.sample_every));
  }
  if (args.chunk_voxels < 0)
    throw std::invalid_argument(fmt::format("--chunk-voxels {}: 0 (auto) or more", args.chunk_voxels));
}

// The job's key: the signals, the scheme, every option that changes a chain, and the block size (v3: the chains' lanes
// per voxel, which sum a voxel's measurements in another order than v2's one work-item).
std::string bedpost_job_key(const DiffusionScheme& scheme, const std::vector<float>& data, const BallStickOptions& o,
                            int64_t voxels, int64_t per_chunk, bool host_start) {
  std::vector<double> bvecs;
  for (const auto& g : scheme.bvecs) bvecs.insert(bvecs.end(), g.begin(), g.end());
  const std::string options = fmt::format(
      "bedpost v3; start {}; voxels {}; per chunk {}; fibres {}; ard {:a}; burn-in {}; jumps {}; every {}; model {}; "
      "rician {}; allard {}; noard {}; update {}; seed {}",
      host_start ? "host" : "device with fp64, else host", voxels, per_chunk, o.fibres, o.ard_weight, o.burn_in,
      o.jumps, o.sample_every, o.model, o.rician, o.all_ard, o.no_ard, o.update_proposal_every, o.seed);
  return job_key(options, {bytes_of(scheme.bvals), bytes_of(bvecs), bytes_of(data)});
}

// The acceptance rates of the recorded iterations per parameter (S0, d, d_std, tau, then th/ph/f of each fibre).
nlohmann::json acceptance_rates(const BallStickRun& run, int fibres) {
  nlohmann::json acceptance;
  const char* names[] = {"S0", "d", "d_std", "tau"};
  for (int k = 0; k < 4; ++k) {
    const double total = run.accepted[static_cast<size_t>(k)] + run.rejected[static_cast<size_t>(k)];
    if (total > 0) acceptance[names[k]] = run.accepted[static_cast<size_t>(k)] / total;
  }
  for (int j = 0; j < fibres; ++j) {
    for (int w = 0; w < 3; ++w) {
      const auto k = static_cast<size_t>(fibre_par(j, w));
      const double total = run.accepted[k] + run.rejected[k];
      if (total > 0)
        acceptance[fmt::format("{}{}", w == 0 ? "th" : w == 1 ? "ph" : "f", j + 1)] = run.accepted[k] / total;
    }
  }
  return acceptance;
}

}  // namespace

void run_bedpost(const BedpostOptions& args, const DeviceChoice& choice) {
  const Stopwatch clock;
  const BallStickOptions& o = args.chains;
  std::string dir = args.dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const fs::path out = args.out.empty() ? fs::path(dir + ".bedpostX") : fs::path(args.out);
  check_bedpost_options(args, out, Ranks::world().root());
  ScaleOut scale(choice);  // the devices open while the inputs are read
  // Rank 0 reads the folder; the other ranks read a copy of its files.
  const DiffusionInput input = read_bedpost_dir(scale.input(dir));
  const int n = input.scheme.measurements();
  const auto voxels = static_cast<int64_t>(input.voxels.size());
  spdlog::info("bedpost: {} voxels in {}/nodif_brain_mask, {} measurements, {} fibre(s), model {}, {} noise", voxels,
               dir, n, o.fibres, o.model, o.rician ? "Rician" : "Gaussian");
  const std::vector<float> data = gather_mask_signals(input);
  Workers& workers = scale.workers();
  const VoxelBlocks blocks = bedpost_blocks(voxels, args.chunk_voxels, workers.total_devices());
  const fs::path partial = out.string() + ".partial", chunk_dir = partial / "chunks";
  if (scale.root()) prepare_partial_folder(partial, chunk_dir);
  spdlog::info("bedpost: {} block(s) of up to {} voxels (starting states on {}, then the chains)", blocks.count(),
               blocks.per_block, args.host_start ? "the host's cores" : "the devices");

  // Progress: with one process, within blocks (the chains' iterations); under mpirun, per finished block.
  const int64_t iterations = o.burn_in + o.jumps;
  std::mutex progress_mutex;
  ProgressLog progress("voxels", 2.0);
  int64_t iterations_done = 0;  // voxel-iterations of this process's blocks
  const bool fine_progress = scale.root() && scale.ranks().size() == 1;
  BedpostBlockWork work{input.scheme, data, o, args.host_start, {}, 0.0, 0.0};
  ChunkJob job;
  job.name = "bedpost voxels";
  job.chunks = blocks.count();
  job.key = bedpost_job_key(input.scheme, data, o, voxels, blocks.per_block, args.host_start);
  job.chunk_dir = chunk_dir;
  job.compute = [&](Device& device, int, int64_t chunk) {
    return run_bedpost_block(device, work, blocks.begin(chunk), blocks.end(chunk), [&](int64_t more) {
      if (!fine_progress) return;
      std::lock_guard lock(progress_mutex);
      iterations_done += more;
      progress(iterations_done / iterations, voxels);
    });
  };
  const Stopwatch job_clock;
  const std::vector<ChunkBytes> results = scale.run(job, [&](int64_t done, int64_t) {
    if (fine_progress) return;
    std::lock_guard lock(progress_mutex);
    progress(std::min(voxels, done * blocks.per_block), voxels);
  });
  const double job_seconds = job_clock.seconds();
  const nlohmann::json devices = scale.devices_report(blocks.count(), blocks.per_block);
  if (!scale.root()) return;  // rank 0 writes

  int64_t unfitted = 0;
  const Stopwatch join_clock;
  BallStickRun run = join_bedpost_blocks(results, blocks, unfitted);
  spdlog::debug("bedpost: {} block(s) joined in {:.3f} s", blocks.count(), join_clock.seconds());
  spdlog::info("bedpost: {} voxel(s) without a usable fit started from defaults", unfitted);
  sort_fibres_by_mean_f(run);  // bedpostx's output order: fibre 1 the strongest in every voxel

  // Outputs, into OUT.partial (every write checked and fsynced); renamed to OUT when every file is there.
  PartialFolder writing(partial, chunk_dir);
  const Stopwatch write_clock;
  write_bedpost_maps(partial, input.data.header(), input.voxels, run, o);
  const double write_seconds = write_clock.seconds();
  copy_text_file(fs::path(dir) / "bvals", partial / "bvals");
  copy_text_file(fs::path(dir) / "bvecs", partial / "bvecs");
  const nlohmann::json summary{{"dir", dir},
                               {"voxels", voxels},
                               {"measurements", n},
                               {"fibres", o.fibres},
                               {"ard_weight", o.ard_weight},
                               {"burn_in", o.burn_in},
                               {"jumps", o.jumps},
                               {"sample_every", o.sample_every},
                               {"samples", run.samples},
                               {"model", o.model},
                               {"rician", o.rician},
                               {"all_ard", o.all_ard},
                               {"no_ard", o.no_ard},
                               {"seed", o.seed},
                               {"start", args.host_start ? "host" : "device (host where a device has no fp64)"},
                               {"unfitted_voxels", unfitted},
                               {"acceptance_while_recording", acceptance_rates(run, o.fibres)},
                               {"device", workers.device(0).info().device_name},
                               {"devices", devices},
                               {"init_seconds", work.init_seconds},
                               {"mcmc_seconds", work.mcmc_seconds},
                               {"chunks_seconds", job_seconds},
                               {"write_seconds", write_seconds},
                               {"seconds", clock.seconds()}};
  write_text_atomically(partial / "bedpost.json", summary.dump(2) + "\n");
  writing.complete(out);
  fmt::print(
      "bedpost: {} voxels, {} samples of {} fibre(s) -> {} ({} block(s) on {} device(s), {} restored; chains {:.2f} s, "
      "writing {:.2f} s, {:.2f} s in all)\n",
      voxels, run.samples, o.fibres, out.string(), blocks.count(), workers.total_devices(), scale.stats().restored,
      job_seconds, write_seconds, clock.seconds());
}

}  // namespace rtf
