// `rtfmri bedpost DIR`: FSL bedpostx's ball-and-stick MCMC on the device. Reads DIR/data, bvals, bvecs and
// nodif_brain_mask as bedpostx does; cuts the mask voxels into blocks spread over the devices of --devices and the
// ranks of mpirun (core/scale/chunk_job.hpp); each block is started on its device (tensor, then a Levenberg-Marquardt
// fit in double: core/diffusion/ball_stick_start.hpp; on the host's cores with --host-start or without fp64) and its
// chains run (core/diffusion/ball_stick_mcmc.hpp: streams keyed by the voxel's index
// in the whole mask, so any split gives the same chains). Rank 0 writes DIR.bedpostX with FSL's file names, built as
// DIR.bedpostX.partial (the finished blocks kept in its chunks/ folder, reused by a run started again) and renamed
// when complete. docs/algorithms/bedpost.md, docs/scale.md.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "cli/cli_support.hpp"
#include "cli/option_checks.hpp"
#include "core/diffusion/ball_stick_init.hpp"
#include "core/diffusion/ball_stick_mcmc.hpp"
#include "core/diffusion/ball_stick_start.hpp"
#include "core/diffusion/bedpost_outputs.hpp"
#include "core/diffusion/diffusion_data.hpp"
#include "core/diffusion/fibre_order.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/checked_file.hpp"
#include "core/io/nifti_io.hpp"
#include "core/scale/chunk_job.hpp"
#include "core/util/hash.hpp"
#include "core/util/host_threads.hpp"

namespace {

namespace fs = std::filesystem;

struct BedpostArgs {
  std::string dir, out;
  rtf::BallStickOptions options;
  int chunk_voxels = 0;     // 0: from the devices (4 blocks per device, at least kMinChunkVoxels)
  bool host_start = false;  // the starting states on the host's cores instead of the devices
};

constexpr int64_t kMinChunkVoxels = 1024;
constexpr int64_t kBusyVoxels = 65536;
constexpr int kChunksPerDevice = 4;

void copy_text(const fs::path& from, const fs::path& to) {
  std::ifstream in(from, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) throw std::runtime_error(fmt::format("{}: cannot be read again", from.string()));
  rtf::write_text_atomically(to, text.str());
}

template <typename T>
std::string_view bytes_of(const std::vector<T>& values) {
  return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)};
}

// The job's key: the signals, the scheme, every option that changes a chain, and the block size (v3: the chains' lanes
// per voxel, which sum a voxel's measurements in another order than v2's one work-item).
std::string job_key(const rtf::DiffusionScheme& scheme, const std::vector<float>& data, const rtf::BallStickOptions& o,
                    int64_t voxels, int64_t per_chunk, bool host_start) {
  std::vector<double> bvecs;
  for (const auto& g : scheme.bvecs) bvecs.insert(bvecs.end(), g.begin(), g.end());
  const std::string options = fmt::format(
      "bedpost v3; start {}; voxels {}; per chunk {}; fibres {}; ard {:a}; burn-in {}; jumps {}; every {}; model {}; "
      "rician {}; allard {}; noard {}; update {}; seed {}",
      host_start ? "host" : "device with fp64, else host", voxels, per_chunk, o.fibres, o.ard_weight, o.burn_in,
      o.jumps, o.sample_every, o.model, o.rician, o.all_ard, o.no_ard, o.update_proposal_every, o.seed);
  return rtf::hash_hex({options, bytes_of(scheme.bvals), bytes_of(bvecs), bytes_of(data)});
}

// A block's result: its voxels' draws, means and acceptance counts, and how many of them had no usable fit.
rtf::ChunkBytes pack_block(const rtf::BallStickRun& run, int64_t unfitted) {
  rtf::ChunkWriter w;
  // 4 header values, then 7 lists, each a length and its values (the draws are ~1.8 kB a voxel: growing the bytes
  // after them would copy them again).
  const size_t voxel_values = 4 * static_cast<size_t>(run.voxels);
  w.reserve(3 * sizeof(int32_t) + sizeof(int64_t) + 7 * sizeof(uint64_t) + run.draws.size() * sizeof(float) +
            (voxel_values + 2 * run.accepted.size()) * sizeof(double));
  w.value(static_cast<int32_t>(run.voxels)).value(static_cast<int32_t>(run.samples));
  w.value(static_cast<int32_t>(run.fibres)).value(unfitted);
  w.values(run.draws).values(run.mean_s0).values(run.mean_d).values(run.mean_d_std).values(run.mean_tau);
  w.values(std::vector<double>(run.accepted.begin(), run.accepted.end()));
  w.values(std::vector<double>(run.rejected.begin(), run.rejected.end()));
  return w.take();
}

// Every block's result placed in one run of all the voxels (blocks in voxel order, as block() cuts them); adds the
// blocks' unfitted counts to `unfitted`. The samples (~1.8 kB a voxel) are copied once, from the blocks' bytes in
// place, rows spread over the host's cores (one thread copying 270 MB into fresh pages took ~0.3 s).
rtf::BallStickRun join_blocks(const std::vector<rtf::ChunkBytes>& results, const std::vector<int64_t>& block_voxels,
                              int64_t& unfitted) {
  struct Placed {
    const uint8_t* draws = nullptr;
    size_t voxels = 0, begin = 0;
  };
  rtf::BallStickRun run;
  std::vector<Placed> placed;
  size_t total = 0;
  for (size_t c = 0; c < results.size(); ++c) {
    rtf::ChunkReader r(results[c]);
    const auto voxels = r.value<int32_t>(), samples = r.value<int32_t>(), fibres = r.value<int32_t>();
    unfitted += r.value<int64_t>();
    size_t draws = 0;
    const uint8_t* first = r.list_in_place<float>(draws);
    const std::vector<double> s0 = r.values<double>(), d = r.values<double>(), d_std = r.values<double>(),
                              tau = r.values<double>(), accepted = r.values<double>(), rejected = r.values<double>();
    const auto v = static_cast<size_t>(block_voxels[c]);
    if (c == 0) {
      run.samples = samples;
      run.fibres = fibres;
    }
    if (!r.done() || voxels != block_voxels[c] || samples != run.samples || fibres != run.fibres ||
        draws != 3 * static_cast<size_t>(fibres) * static_cast<size_t>(samples) * v || s0.size() != v ||
        d.size() != v || d_std.size() != v || tau.size() != v || accepted.size() != run.accepted.size() ||
        rejected.size() != run.rejected.size()) {
      throw std::runtime_error(fmt::format("bedpost: block {}'s result does not hold {} voxels", c, v));
    }
    run.mean_s0.insert(run.mean_s0.end(), s0.begin(), s0.end());
    run.mean_d.insert(run.mean_d.end(), d.begin(), d.end());
    run.mean_d_std.insert(run.mean_d_std.end(), d_std.begin(), d_std.end());
    run.mean_tau.insert(run.mean_tau.end(), tau.begin(), tau.end());
    for (size_t k = 0; k < accepted.size(); ++k) {
      run.accepted[k] += accepted[k];
      run.rejected[k] += rejected[k];
    }
    placed.push_back({first, v, total});
    total += v;
  }
  run.voxels = static_cast<int>(total);
  const size_t rows = 3 * static_cast<size_t>(run.fibres) * static_cast<size_t>(run.samples);
  run.draws.resize(rows * total);
  rtf::host_ranges(rows, std::min<size_t>(16, rtf::host_thread_count()), [&](size_t row_begin, size_t row_end, size_t) {
    for (size_t row = row_begin; row < row_end; ++row) {
      for (const Placed& b : placed) {
        std::memcpy(run.draws.data() + row * total + b.begin, b.draws + row * b.voxels * sizeof(float),
                    b.voxels * sizeof(float));
      }
    }
  });
  return run;
}

// Removes everything in OUT.partial but its finished blocks (chunks/).
void remove_all_but_chunks(const fs::path& partial, const fs::path& chunk_dir) {
  for (const fs::directory_entry& e : fs::directory_iterator(partial)) {
    if (e.path() != chunk_dir) fs::remove_all(e.path());
  }
}

// Clears what an interrupted run left in OUT.partial except its finished blocks (chunks/), which this run reuses.
void prepare_partial(const fs::path& partial, const fs::path& chunk_dir) {
  if (fs::exists(partial)) {
    spdlog::warn("bedpost: {} left by an interrupted run: its finished blocks are reused, its other files removed",
                 partial.string());
    remove_all_but_chunks(partial, chunk_dir);
  }
  fs::create_directories(partial);
}

// While the outputs are written into OUT.partial: a failure (e.g. a full disk) removes the files written so far, which
// may be what filled the disk, and keeps the finished blocks, so that the command run again only writes.
class PartialOutputs {
 public:
  PartialOutputs(fs::path partial, fs::path chunk_dir)
      : partial_(std::move(partial)), chunk_dir_(std::move(chunk_dir)) {}
  ~PartialOutputs() {
    if (complete_) return;
    try {
      remove_all_but_chunks(partial_, chunk_dir_);
      spdlog::warn("bedpost: no output kept; the finished blocks stay in {} for the same command run again",
                   chunk_dir_.string());
    } catch (...) {  // never throws from a destructor
    }
  }
  PartialOutputs(const PartialOutputs&) = delete;
  PartialOutputs& operator=(const PartialOutputs&) = delete;
  void complete() { complete_ = true; }

 private:
  fs::path partial_, chunk_dir_;
  bool complete_ = false;
};

void run(const BedpostArgs& args, const rtf::cli::GlobalOptions& globals) {
  using namespace rtf;
  const cli::Stopwatch clock;
  const BallStickOptions& o = args.options;
  const Ranks& ranks = Ranks::world();
  std::string dir = args.dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const fs::path out = args.out.empty() ? fs::path(dir + ".bedpostX") : fs::path(args.out);
  if (ranks.root() && fs::exists(out)) {
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
  cli::WorkersOpening opening(globals);  // while the inputs are read
  // Rank 0 reads the folder; the other ranks read a copy of its files.
  const DiffusionInput input = read_bedpost_dir(ranks.local_input(dir));
  const int n = input.scheme.measurements();
  const auto voxels = static_cast<int64_t>(input.voxels.size());
  spdlog::info("bedpost: {} voxels in {}/nodif_brain_mask, {} measurements, {} fibre(s), model {}, {} noise", voxels,
               dir, n, o.fibres, o.model, o.rician ? "Rician" : "Gaussian");
  const std::vector<float> data = gather_mask_signals(input);
  Workers workers = opening.get();

  // Blocks of mask voxels: their boundaries change no chain, so they are sized from the devices. A GPU runs a block's
  // chains at its best speed from a few ten thousand voxels (kernels/ball_stick.cl: 4 work-items per voxel, ~20% more
  // time per voxel at 18,750 voxels than at 150,000 on an H200): a device whose whole share is below 2 kBusyVoxels gets
  // it as one block; larger shares are cut into up to kChunksPerDevice blocks per device of at least kBusyVoxels, the
  // same number for every device (alike devices then end together).
  const auto device_total = static_cast<int64_t>(workers.total_devices());
  const int64_t share = (voxels + device_total - 1) / device_total;
  const int64_t blocks_per_device = std::clamp<int64_t>(share / kBusyVoxels, 1, kChunksPerDevice);
  const int64_t per_chunk = args.chunk_voxels > 0
                                ? args.chunk_voxels
                                : std::max(kMinChunkVoxels, (voxels + blocks_per_device * device_total - 1) /
                                                                (blocks_per_device * device_total));
  const int64_t chunks = (voxels + per_chunk - 1) / per_chunk;
  const auto block = [&](int64_t chunk) {
    const int64_t begin = chunk * per_chunk;
    return std::pair{begin, std::min(voxels, begin + per_chunk)};
  };
  const fs::path partial = out.string() + ".partial", chunk_dir = partial / "chunks";
  if (workers.root()) prepare_partial(partial, chunk_dir);
  spdlog::info("bedpost: {} block(s) of up to {} voxels (starting states on {}, then the chains)", chunks, per_chunk,
               args.host_start ? "the host's cores" : "the devices");

  const int iterations = o.burn_in + o.jumps;
  std::mutex progress_mutex;
  cli::ProgressLog progress("voxels", 2.0);
  int64_t iterations_done = 0;  // voxel-iterations of this process's blocks (one process: progress within blocks)
  const bool fine_progress = workers.root() && ranks.size() == 1;
  std::mutex times_mutex;
  double init_seconds = 0, mcmc_seconds = 0;  // summed over this process's blocks

  ChunkJob job;
  job.name = "bedpost voxels";
  job.chunks = chunks;
  job.key = job_key(input.scheme, data, o, voxels, per_chunk, args.host_start);
  job.chunk_dir = chunk_dir;
  job.compute = [&](Device& device, int, int64_t chunk) {
    const auto [begin, end] = block(chunk);
    const auto un = static_cast<size_t>(n);
    // A CPU device (PoCL, ~100x slower than a GPU) runs its block in parts of kCpuPart voxels, so that a backup copy
    // on a GPU that finishes first stops it within one part's launch (the chains do not depend on the parts).
    constexpr int64_t kCpuPart = 1024;
    const int64_t part = device.info().is_cpu() ? kCpuPart : end - begin;
    std::vector<BallStickRun> parts;
    int64_t unfitted_here = 0;
    for (int64_t first = begin; first < end; first += part) {
      const int64_t last = std::min(end, first + part);
      const auto count = static_cast<int>(last - first);
      const std::vector<float> y(data.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(first) * un),
                                 data.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(last) * un));
      throw_if_chunk_cancelled();
      const cli::Stopwatch init_clock;
      std::vector<uint8_t> fitted;
      const std::vector<BallStickParams> init =
          args.host_start || !device.has_fp64()
              ? initialise_ball_stick(input.scheme, y.data(), count, o.fibres, o.model, &fitted)
              : initialise_ball_stick_on_device(device, input.scheme, y.data(), count, o.fibres, o.model, &fitted);
      const double init_s = init_clock.seconds();
      unfitted_here += static_cast<int64_t>(std::count(fitted.begin(), fitted.end(), 0));
      const cli::Stopwatch mcmc_clock;
      int64_t reported = 0;
      parts.push_back(
          ball_stick_mcmc(device, input.scheme, y, init, o, static_cast<uint32_t>(first), [&](int64_t done, int64_t) {
            throw_if_chunk_cancelled();  // a backup copy on another device finished this block
            if (!fine_progress) return;
            std::lock_guard lock(progress_mutex);
            iterations_done += done - reported;
            reported = done;
            progress(iterations_done / iterations, voxels);
          }));
      const double mcmc_s = mcmc_clock.seconds();
      spdlog::debug("bedpost: voxels {}-{} on {}: start {:.3f} s, chains {:.3f} s", first, last - 1,
                    device.info().label(), init_s, mcmc_s);
      std::lock_guard lock(times_mutex);
      init_seconds += init_s;
      mcmc_seconds += mcmc_s;
    }
    const cli::Stopwatch pack_clock;
    ChunkBytes packed = pack_block(parts.size() == 1 ? parts.front() : join_ball_stick_runs(parts), unfitted_here);
    spdlog::debug("bedpost: voxels {}-{} packed in {:.3f} s", begin, end - 1, pack_clock.seconds());
    return packed;
  };
  ChunkJobStats stats;
  const cli::Stopwatch job_clock;
  const std::vector<ChunkBytes> results = workers.run(
      job,
      [&](int64_t done, int64_t) {
        if (fine_progress) return;
        std::lock_guard lock(progress_mutex);
        progress(std::min(voxels, done * per_chunk), voxels);  // under mpirun: per finished block
      },
      &stats);
  const double job_seconds = job_clock.seconds();
  const nlohmann::json per_device = cli::chunks_per_device(ranks, stats);
  if (!workers.root()) return;  // rank 0 writes

  int64_t unfitted = 0;
  std::vector<int64_t> block_voxels;
  for (int64_t c = 0; c < chunks; ++c) {
    const auto [begin, end] = block(c);
    block_voxels.push_back(end - begin);
  }
  const cli::Stopwatch join_clock;
  BallStickRun run = join_blocks(results, block_voxels, unfitted);
  spdlog::debug("bedpost: {} block(s) joined in {:.3f} s", chunks, join_clock.seconds());
  spdlog::info("bedpost: {} voxel(s) without a usable fit started from defaults", unfitted);
  sort_fibres_by_mean_f(run);  // bedpostx's output order: fibre 1 the strongest in every voxel

  // Outputs, into OUT.partial (every write checked and fsynced); renamed to OUT when every file is there.
  PartialOutputs writing(partial, chunk_dir);
  const cli::Stopwatch write_clock;
  write_bedpost_maps(partial, input.data.header(), input.voxels, run, o);
  const double write_seconds = write_clock.seconds();
  const int samples = run.samples;
  copy_text(fs::path(dir) / "bvals", partial / "bvals");
  copy_text(fs::path(dir) / "bvecs", partial / "bvecs");
  nlohmann::json acceptance;
  const char* names[] = {"S0", "d", "d_std", "tau"};
  for (int k = 0; k < 4; ++k) {
    const double total = run.accepted[static_cast<size_t>(k)] + run.rejected[static_cast<size_t>(k)];
    if (total > 0) acceptance[names[k]] = run.accepted[static_cast<size_t>(k)] / total;
  }
  for (int j = 0; j < o.fibres; ++j) {
    for (int w = 0; w < 3; ++w) {
      const auto k = static_cast<size_t>(fibre_par(j, w));
      const double total = run.accepted[k] + run.rejected[k];
      if (total > 0)
        acceptance[fmt::format("{}{}", w == 0 ? "th" : w == 1 ? "ph" : "f", j + 1)] = run.accepted[k] / total;
    }
  }
  // Where it ran (differs between runs of the same result): one key, "devices".
  const nlohmann::json devices{
      {"total", workers.total_devices()}, {"ranks", ranks.size()},           {"chunks", chunks},
      {"chunk_voxels", per_chunk},        {"chunks_per_device", per_device}, {"restored_chunks", stats.restored},
      {"rank0", workers.describe()}};
  const nlohmann::json summary{{"dir", dir},
                               {"voxels", voxels},
                               {"measurements", n},
                               {"fibres", o.fibres},
                               {"ard_weight", o.ard_weight},
                               {"burn_in", o.burn_in},
                               {"jumps", o.jumps},
                               {"sample_every", o.sample_every},
                               {"samples", samples},
                               {"model", o.model},
                               {"rician", o.rician},
                               {"all_ard", o.all_ard},
                               {"no_ard", o.no_ard},
                               {"seed", o.seed},
                               {"start", args.host_start ? "host" : "device (host where a device has no fp64)"},
                               {"unfitted_voxels", unfitted},
                               {"acceptance_while_recording", acceptance},
                               {"device", workers.device(0).info().device_name},
                               {"devices", devices},
                               {"init_seconds", init_seconds},
                               {"mcmc_seconds", mcmc_seconds},
                               {"chunks_seconds", job_seconds},
                               {"write_seconds", write_seconds},
                               {"seconds", clock.seconds()}};
  write_text_atomically(partial / "bedpost.json", summary.dump(2) + "\n");
  writing.complete();
  fs::remove_all(chunk_dir);
  fs::rename(partial, out);
  io::fsync_directory(out.parent_path());
  fmt::print(
      "bedpost: {} voxels, {} samples of {} fibre(s) -> {} ({} block(s) on {} device(s), {} restored; chains {:.2f} s, "
      "writing {:.2f} s, {:.2f} s in all)\n",
      voxels, samples, o.fibres, out.string(), chunks, workers.total_devices(), stats.restored, job_seconds,
      write_seconds, clock.seconds());
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<BedpostArgs>();
  auto* cmd = app.add_subcommand(
      "bedpost",
      "FSL bedpostx's ball-and-stick model by MCMC on the device: fibre orientations and fractions per voxel, with "
      "FSL's outputs (docs/algorithms/bedpost.md). Spreads blocks of voxels over the devices of --devices (e.g. "
      "`rtfmri --devices gpu bedpost DIR`) and over the ranks of `mpirun -np K rtfmri bedpost DIR` (rank 0 reads and "
      "writes; docs/scale.md); any split gives the same chains, bit for bit");
  cmd->add_option("DIR", args->dir,
                  "bedpostx's input folder: data.nii.gz (4D), bvals, bvecs (FSL: 3 rows), nodif_brain_mask.nii.gz")
      ->required()
      ->check(rtf::cli::existing_directory_on_rank_zero());
  rtf::BallStickOptions& o = args->options;
  cmd->add_option("-n,--nfibres", o.fibres, "Fibres per voxel (1..3)")->capture_default_str();
  cmd->add_option("-w,--fudge", o.ard_weight, "ARD weight: larger switches unsupported fibres off more readily")
      ->capture_default_str();
  cmd->add_option("-b,--burnin", o.burn_in, "Burn-in iterations (proposal widths adapt during them)")
      ->capture_default_str();
  cmd->add_option("-j,--njumps", o.jumps, "Iterations after burn-in")->capture_default_str();
  cmd->add_option("-s,--sampleevery", o.sample_every, "Keep every s-th iteration after burn-in (j / s samples)")
      ->capture_default_str();
  cmd->add_option("--model", o.model,
                  "1: ball and sticks, one diffusivity; 2: gamma-distributed diffusivities (d_std; for several "
                  "b-shells)")
      ->check(CLI::IsMember({1, 2}))
      ->capture_default_str();
  cmd->add_flag("--rician", o.rician, "Rician noise (samples the noise precision tau) instead of Gaussian");
  cmd->add_flag("--allard", o.all_ard, "ARD on the first fibre too");
  cmd->add_flag("--noard", o.no_ard, "No ARD on any fibre");
  cmd->add_option("--updateproposalevery", o.update_proposal_every,
                  "Adapt the proposal widths every this many burn-in iterations")
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of the random streams (same seed: same chains on any device)")
      ->capture_default_str();
  cmd->add_option("--chunk-voxels", args->chunk_voxels,
                  "Voxels per block handed to a device (0: from the devices: one block per device while a device's "
                  "share is below 131,072 voxels, else up to 4 per device of at least 65,536, as many for every "
                  "device; the results do not depend on it)")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_flag("--host-start", args->host_start,
                "Compute each voxel's starting state (tensor fit, then Levenberg-Marquardt) on the host's cores in "
                "double, as the reference does, instead of on the devices (the default where a device has fp64; the "
                "two agree to rounding on well-posed voxels, docs/algorithms/bedpost.md)");
  cmd->add_option(
      "--out", args->out,
      "Output folder (default DIR.bedpostX; must not exist), with FSL's files: merged_th<i>samples, "
      "merged_ph<i>samples, merged_f<i>samples (one volume per sample), mean_th/ph/f<i>samples, "
      "mean_dsamples, mean_S0samples, mean_fsumsamples (mean_d_stdsamples: model 2; mean_tausamples: "
      "--rician), dyads<i>, dyads<i>_dispersion, nodif_brain_mask, bvals, bvecs, and bedpost.json; built as "
      "OUT.partial and renamed when complete (a run stopped midway keeps its finished blocks in OUT.partial/chunks/: "
      "the same command again reuses them)");
  cmd->callback([args, &globals] { run(*args, globals); });
}

RTF_REGISTER_COMMAND(78, setup);

}  // namespace
