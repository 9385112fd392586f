// Host side of the ball-and-stick chains: validation, voxel blocks, the lanes per voxel, the measurements transposed
// to [n][V], the state uploaded, launches of kIterationsPerLaunch iterations, the samples and means read back.
#include "core/diffusion/ball_stick_mcmc.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/device/buffer.hpp"
#include "core/device/launch.hpp"
#include "core/random/philox.hpp"

namespace rtf {

namespace {

constexpr int kIterationsPerLaunch = 250;
constexpr int kQuantities = kBallStickQuantities;
constexpr int kGroup = 64;     // work-items per work-group
constexpr int kMaxLanes = 32;  // work-items per voxel

void check_inputs(const Device& device, const DiffusionScheme& scheme, const std::vector<float>& data,
                  const std::vector<BallStickParams>& init, const BallStickOptions& o, bool use_double) {
  const int n = scheme.measurements();
  if (n < 1 || static_cast<int>(scheme.bvecs.size()) != n || init.empty() ||
      data.size() != init.size() * static_cast<size_t>(n)) {
    throw std::invalid_argument(
        fmt::format("ball-and-stick: {} values for {} voxels of {} measurements", data.size(), init.size(), n));
  }
  if (o.fibres < 1 || o.fibres > kBallStickMaxFibres || (o.model != 1 && o.model != 2) || o.burn_in < 0 ||
      o.jumps < 1 || o.sample_every < 1 || o.samples() < 1 || o.update_proposal_every < 1 || !(o.ard_weight >= 0) ||
      o.lanes < 0 || o.lanes > kMaxLanes || (o.lanes & (o.lanes - 1)) != 0) {
    throw std::invalid_argument(fmt::format(
        "ball-and-stick: fibres {} (1..{}), model {} (1|2), burn-in {}, jumps {}, sample every {} (at least one "
        "sample), ARD weight {}, lanes {} (0 or a power of two up to {})",
        o.fibres, kBallStickMaxFibres, o.model, o.burn_in, o.jumps, o.sample_every, o.ard_weight, o.lanes, kMaxLanes));
  }
  if (use_double && !device.has_fp64()) throw std::invalid_argument("ball-and-stick in double: the device has no fp64");
}

// Voxels per launch: the device buffers of a voxel within a quarter of the device's memory, at most 2^20.
size_t block_voxels(const Device& device, int n, const BallStickOptions& o, size_t real_bytes) {
  const auto un = static_cast<size_t>(n), nf = static_cast<size_t>(o.fibres);
  const size_t per_voxel =
      un * 4 + 3 * nf * static_cast<size_t>(o.samples()) * 4 + (3 * kQuantities + 4) * real_bytes + 2 * kQuantities * 4;
  const uint64_t budget = std::min<uint64_t>(device.info().global_mem_bytes / 4, device.info().max_alloc_bytes);
  return std::clamp<size_t>(budget / per_voxel, 64, size_t{1} << 20);
}

// One block of voxels [begin, end) on the device, every buffer in `Real`.
template <typename Real>
struct Block {
  DeviceBuffer<float> y, samples;
  DeviceBuffer<Real> scheme, state, widths, sums, trace;
  DeviceBuffer<int> counts;
  ClKernel kernel;
  int voxels = 0, n = 0, lanes = 1;
};

std::vector<std::string> kernel_defines(const BallStickOptions& o, int n, int lanes, bool use_double, bool trace) {
  std::vector<std::string> d{fmt::format("NF={}", o.fibres),
                             fmt::format("MODEL={}", o.model),
                             fmt::format("RICIAN={}", o.rician ? 1 : 0),
                             fmt::format("LANES={}", lanes),
                             fmt::format("MEAS={}", (n + lanes - 1) / lanes),
                             fmt::format("GROUP={}", kGroup)};
  if (use_double) d.emplace_back("USE_DOUBLE");
  if (trace) d.emplace_back("TRACE");
  return d;
}

template <typename Real>
Block<Real> upload_block(Device& device, const DiffusionScheme& scheme, const std::vector<float>& data,
                         const std::vector<BallStickParams>& init, const BallStickOptions& o, size_t begin, size_t end,
                         int trace_iterations) {
  const cl_command_queue q = device.queue();
  const int n = scheme.measurements();
  const auto un = static_cast<size_t>(n), vox = end - begin;
  Block<Real> b;
  b.voxels = static_cast<int>(vox);
  b.n = n;
  b.lanes = ball_stick_lanes(device, n, o);
  std::vector<float> y(un * vox);
  for (size_t v = 0; v < vox; ++v) {
    for (size_t i = 0; i < un; ++i) y[i * vox + v] = data[(begin + v) * un + i];
  }
  std::vector<Real> s(4 * un);
  for (size_t i = 0; i < un; ++i) {
    s[4 * i] = static_cast<Real>(scheme.bvals[i]);
    for (size_t c = 0; c < 3; ++c) s[4 * i + 1 + c] = static_cast<Real>(scheme.bvecs[i][c]);
  }
  std::vector<Real> state(kQuantities * vox), widths(kQuantities * vox);
  for (size_t v = 0; v < vox; ++v) {
    const BallStickVector p = pack_params(init[begin + v]), w = initial_proposal_widths(init[begin + v]);
    for (size_t k = 0; k < kQuantities; ++k) {
      state[k * vox + v] = static_cast<Real>(p[k]);
      widths[k * vox + v] = static_cast<Real>(w[k]);
    }
  }
  b.y = DeviceBuffer<float>(device, y.size(), CL_MEM_READ_ONLY);
  b.y.write(q, y);
  b.scheme = DeviceBuffer<Real>(device, s.size(), CL_MEM_READ_ONLY);
  b.scheme.write(q, s);
  b.state = DeviceBuffer<Real>(device, state.size());
  b.state.write(q, state);
  b.widths = DeviceBuffer<Real>(device, widths.size());
  b.widths.write(q, widths);
  b.counts = DeviceBuffer<int>(device, 2 * kQuantities * vox);
  b.counts.fill(q, 0);
  b.samples = DeviceBuffer<float>(device, 3 * static_cast<size_t>(o.fibres) * static_cast<size_t>(o.samples()) * vox);
  b.sums = DeviceBuffer<Real>(device, 4 * vox);
  b.sums.fill(q, Real{0});
  b.trace = DeviceBuffer<Real>(
      device, trace_iterations > 0 ? static_cast<size_t>(trace_iterations) * kQuantities * vox : size_t{1});
  b.kernel = device.kernel("ball_stick.cl", "ball_stick_iterations",
                           kernel_defines(o, n, b.lanes, std::is_same_v<Real, double>, trace_iterations > 0));
  return b;
}

template <typename Real>
void run_iterations(Device& device, Block<Real>& b, const BallStickOptions& o, uint32_t voxel_offset, int first,
                    int count) {
  const random::PhiloxKey key = random::seed_key(o.seed);
  set_args(b.kernel, b.y, b.scheme, b.n, b.voxels, voxel_offset, key[0], key[1], first, count, o.burn_in,
           o.update_proposal_every, o.sample_every, o.samples(), ard_fibres(o), static_cast<Real>(o.ard_weight),
           b.state, b.widths, b.counts, b.samples, b.sums, b.trace);
  const auto lanes = static_cast<size_t>(b.lanes), group = static_cast<size_t>(kGroup);
  launch<1>(device.queue(), b.kernel, {round_up(static_cast<size_t>(b.voxels), group / lanes) * lanes}, {group}, {},
            EventMode::kNone);
}

template <typename Real>
BallStickRun run_all(Device& device, const DiffusionScheme& scheme, const std::vector<float>& data,
                     const std::vector<BallStickParams>& init, const BallStickOptions& o, uint32_t first_voxel,
                     const BallStickProgress& progress) {
  const cl_command_queue q = device.queue();
  const size_t total = init.size(), per_block = block_voxels(device, scheme.measurements(), o, sizeof(Real));
  const int iterations = o.burn_in + o.jumps, samples = o.samples();
  BallStickRun out;
  out.voxels = static_cast<int>(total);
  out.samples = samples;
  out.fibres = o.fibres;
  const size_t rows = 3 * static_cast<size_t>(o.fibres) * static_cast<size_t>(samples);
  if (per_block < total) out.draws.assign(rows * total, 0.0f);  // one block: its samples are the draws (below)
  out.mean_s0.resize(total);
  out.mean_d.resize(total);
  out.mean_d_std.resize(total);
  out.mean_tau.resize(total);
  const int64_t work = static_cast<int64_t>(total) * iterations;
  int64_t done = 0;
  for (size_t begin = 0; begin < total; begin += per_block) {
    const size_t end = std::min(total, begin + per_block), vox = end - begin;
    Block<Real> b = upload_block<Real>(device, scheme, data, init, o, begin, end, 0);
    for (int first = 0; first < iterations; first += kIterationsPerLaunch) {
      const int count = std::min(kIterationsPerLaunch, iterations - first);
      run_iterations(device, b, o, first_voxel + static_cast<uint32_t>(begin), first, count);
      device.finish();
      done += static_cast<int64_t>(vox) * count;
      if (progress) progress(done, work);
    }
    std::vector<float> s = b.samples.read_all(q);
    if (vox == total) {
      out.draws = std::move(s);  // [row][voxel] already
    } else {
      for (size_t row = 0; row < rows; ++row) {
        std::copy(s.begin() + static_cast<std::ptrdiff_t>(row * vox),
                  s.begin() + static_cast<std::ptrdiff_t>((row + 1) * vox),
                  out.draws.begin() + static_cast<std::ptrdiff_t>(row * total + begin));
      }
    }
    const std::vector<Real> sums = b.sums.read_all(q);
    for (size_t v = 0; v < vox; ++v) {
      out.mean_s0[begin + v] = static_cast<double>(sums[v]) / samples;
      out.mean_d[begin + v] = static_cast<double>(sums[vox + v]) / samples;
      out.mean_d_std[begin + v] = static_cast<double>(sums[2 * vox + v]) / samples;
      out.mean_tau[begin + v] = static_cast<double>(sums[3 * vox + v]) / samples;
    }
    const std::vector<int> counts = b.counts.read_all(q);
    for (size_t k = 0; k < kQuantities; ++k) {
      for (size_t v = 0; v < vox; ++v) {
        out.accepted[k] += counts[k * vox + v];
        out.rejected[k] += counts[(kQuantities + k) * vox + v];
      }
    }
  }
  return out;
}

}  // namespace

// One on a CPU (its work-items are vector lanes already); on a GPU enough that a lane holds at most
// kMeasurementsPerLane measurements, at least 4. Every lane repeats the voxel's scalar work (draws, priors, the
// decision) and the lanes meet at barriers, so more lanes are not faster once the device is full: on an H200, 69
// measurements, 150,000 voxels, 15.1 / 22.8 / 27.5 us per voxel with 4 / 8 / 2 lanes (1: 34.2, 32: 50.6), and with 4
// lanes 18.7 us per voxel at 18,750 voxels (docs/performance.md).
int ball_stick_lanes(const Device& device, int measurements, const BallStickOptions& options) {
  constexpr int kMeasurementsPerLane = 18;
  if (options.lanes > 0) return options.lanes;
  if (device.info().is_cpu()) return 1;
  int lanes = 4;
  while (lanes < kMaxLanes && (measurements + lanes - 1) / lanes > kMeasurementsPerLane) lanes *= 2;
  return lanes;
}

BallStickRun ball_stick_mcmc(Device& device, const DiffusionScheme& scheme, const std::vector<float>& data,
                             const std::vector<BallStickParams>& init, const BallStickOptions& options,
                             uint32_t first_voxel, const BallStickProgress& progress, bool use_double) {
  check_inputs(device, scheme, data, init, options, use_double);
  return use_double ? run_all<double>(device, scheme, data, init, options, first_voxel, progress)
                    : run_all<float>(device, scheme, data, init, options, first_voxel, progress);
}

BallStickRun join_ball_stick_runs(const std::vector<BallStickRun>& blocks) {
  BallStickRun out;
  if (blocks.empty()) return out;
  out.samples = blocks.front().samples;
  out.fibres = blocks.front().fibres;
  for (const BallStickRun& b : blocks) {
    if (b.samples != out.samples || b.fibres != out.fibres ||
        b.draws.size() !=
            3 * static_cast<size_t>(b.fibres) * static_cast<size_t>(b.samples) * static_cast<size_t>(b.voxels)) {
      throw std::invalid_argument(fmt::format("join_ball_stick_runs: a block of {} samples of {} fibres among {} of {}",
                                              b.samples, b.fibres, out.samples, out.fibres));
    }
    out.voxels += b.voxels;
  }
  const size_t rows = 3 * static_cast<size_t>(out.fibres) * static_cast<size_t>(out.samples),
               total = static_cast<size_t>(out.voxels);
  out.draws.resize(rows * total);
  size_t begin = 0;
  for (const BallStickRun& b : blocks) {
    const auto vox = static_cast<size_t>(b.voxels);
    for (size_t row = 0; row < rows; ++row) {
      std::copy_n(b.draws.begin() + static_cast<std::ptrdiff_t>(row * vox), vox,
                  out.draws.begin() + static_cast<std::ptrdiff_t>(row * total + begin));
    }
    out.mean_s0.insert(out.mean_s0.end(), b.mean_s0.begin(), b.mean_s0.end());
    out.mean_d.insert(out.mean_d.end(), b.mean_d.begin(), b.mean_d.end());
    out.mean_d_std.insert(out.mean_d_std.end(), b.mean_d_std.begin(), b.mean_d_std.end());
    out.mean_tau.insert(out.mean_tau.end(), b.mean_tau.begin(), b.mean_tau.end());
    for (size_t k = 0; k < out.accepted.size(); ++k) {
      out.accepted[k] += b.accepted[k];
      out.rejected[k] += b.rejected[k];
    }
    begin += vox;
  }
  return out;
}

namespace {

template <typename Real>
std::vector<double> trace_block(Device& device, const DiffusionScheme& scheme, const std::vector<float>& data,
                                const std::vector<BallStickParams>& init, const BallStickOptions& o,
                                uint32_t first_voxel, int iterations) {
  Block<Real> b = upload_block<Real>(device, scheme, data, init, o, 0, init.size(), iterations);
  run_iterations(device, b, o, first_voxel, 0, iterations);
  const std::vector<Real> t = b.trace.read_all(device.queue());
  return {t.begin(), t.end()};
}

}  // namespace

std::vector<double> ball_stick_trace(Device& device, const DiffusionScheme& scheme, const std::vector<float>& data,
                                     const std::vector<BallStickParams>& init, const BallStickOptions& options,
                                     uint32_t first_voxel, int iterations, bool use_double) {
  check_inputs(device, scheme, data, init, options, use_double);
  if (iterations < 1) throw std::invalid_argument("ball_stick_trace: at least one iteration");
  return use_double ? trace_block<double>(device, scheme, data, init, options, first_voxel, iterations)
                    : trace_block<float>(device, scheme, data, init, options, first_voxel, iterations);
}

}  // namespace rtf
