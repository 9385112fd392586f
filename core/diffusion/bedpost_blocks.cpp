// bedpost's blocks: sized from the devices, computed part by part on a device, packed as chunk bytes and joined on rank
// 0 with the samples copied once, rows spread over the host's cores.
#include "core/diffusion/bedpost_blocks.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/diffusion/ball_stick_init.hpp"
#include "core/diffusion/ball_stick_start.hpp"
#include "core/scale/chunk_job.hpp"
#include "core/util/host_threads.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {

namespace {

constexpr int64_t kMinChunkVoxels = 1024;
constexpr int64_t kBusyVoxels = 65536;
constexpr int kChunksPerDevice = 4;
constexpr int64_t kCpuPart = 1024;  // voxels per launch on a CPU device

}  // namespace

VoxelBlocks bedpost_blocks(int64_t voxels, int64_t requested, int64_t devices) {
  const int64_t share = (voxels + devices - 1) / devices;
  const int64_t blocks_per_device = std::clamp<int64_t>(share / kBusyVoxels, 1, kChunksPerDevice);
  return voxel_blocks(voxels, requested, devices, blocks_per_device, kMinChunkVoxels);
}

ChunkBytes run_bedpost_block(Device& device, BedpostBlockWork& work, int64_t begin, int64_t end,
                             const BedpostProgress& progress) {
  const BallStickOptions& o = work.options;
  const auto un = static_cast<size_t>(work.scheme.measurements());
  const int64_t part = device.info().is_cpu() ? kCpuPart : end - begin;
  std::vector<BallStickRun> parts;
  int64_t unfitted_here = 0;
  for (int64_t first = begin; first < end; first += part) {
    const int64_t last = std::min(end, first + part);
    const auto count = static_cast<int>(last - first);
    const std::vector<float> y(work.data.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(first) * un),
                               work.data.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(last) * un));
    throw_if_chunk_cancelled();
    const Stopwatch init_clock;
    std::vector<uint8_t> fitted;
    const std::vector<BallStickParams> init =
        work.host_start || !device.has_fp64()
            ? initialise_ball_stick(work.scheme, y.data(), count, o.fibres, o.model, &fitted)
            : initialise_ball_stick_on_device(device, work.scheme, y.data(), count, o.fibres, o.model, &fitted);
    const double init_s = init_clock.seconds();
    unfitted_here += static_cast<int64_t>(std::count(fitted.begin(), fitted.end(), 0));
    const Stopwatch mcmc_clock;
    int64_t reported = 0;
    parts.push_back(
        ball_stick_mcmc(device, work.scheme, y, init, o, static_cast<uint32_t>(first), [&](int64_t done, int64_t) {
          throw_if_chunk_cancelled();  // a backup copy on another device finished this block
          progress(done - reported);
          reported = done;
        }));
    const double mcmc_s = mcmc_clock.seconds();
    spdlog::debug("bedpost: voxels {}-{} on {}: start {:.3f} s, chains {:.3f} s", first, last - 1,
                  device.info().label(), init_s, mcmc_s);
    std::lock_guard lock(work.times_mutex);
    work.init_seconds += init_s;
    work.mcmc_seconds += mcmc_s;
  }
  const Stopwatch pack_clock;
  ChunkBytes packed =
      pack_bedpost_block(parts.size() == 1 ? parts.front() : join_ball_stick_runs(parts), unfitted_here);
  spdlog::debug("bedpost: voxels {}-{} packed in {:.3f} s", begin, end - 1, pack_clock.seconds());
  return packed;
}

ChunkBytes pack_bedpost_block(const BallStickRun& run, int64_t unfitted) {
  ChunkWriter w;
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

// The samples (~1.8 kB a voxel) are copied once, from the blocks' bytes in place, rows spread over the host's cores
// (one thread copying 270 MB into fresh pages took ~0.3 s).
BallStickRun join_bedpost_blocks(const std::vector<ChunkBytes>& results, const VoxelBlocks& blocks, int64_t& unfitted) {
  struct Placed {
    const uint8_t* draws = nullptr;
    size_t voxels = 0, begin = 0;
  };
  BallStickRun run;
  std::vector<Placed> placed;
  size_t total = 0;
  for (size_t c = 0; c < results.size(); ++c) {
    ChunkReader r(results[c]);
    const auto voxels = r.value<int32_t>(), samples = r.value<int32_t>(), fibres = r.value<int32_t>();
    unfitted += r.value<int64_t>();
    size_t draws = 0;
    const uint8_t* first = r.list_in_place<float>(draws);
    const std::vector<double> s0 = r.values<double>(), d = r.values<double>(), d_std = r.values<double>(),
                              tau = r.values<double>(), accepted = r.values<double>(), rejected = r.values<double>();
    const int64_t block_voxels = blocks.size(static_cast<int64_t>(c));
    const auto v = static_cast<size_t>(block_voxels);
    if (c == 0) {
      run.samples = samples;
      run.fibres = fibres;
    }
    if (!r.done() || voxels != block_voxels || samples != run.samples || fibres != run.fibres ||
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
  host_ranges(rows, std::min<size_t>(16, host_thread_count()), [&](size_t row_begin, size_t row_end, size_t) {
    for (size_t row = row_begin; row < row_end; ++row) {
      for (const Placed& b : placed) {
        std::memcpy(run.draws.data() + row * total + b.begin, b.draws + row * b.voxels * sizeof(float),
                    b.voxels * sizeof(float));
      }
    }
  });
  return run;
}

}  // namespace rtf
