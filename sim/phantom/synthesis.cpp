// The phantom's per-volume synthesis loop (threads over slices) and its noise tSNR bookkeeping.
#include "sim/phantom/synthesis.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "core/temporal/detrend_basis.hpp"
#include "sim/phantom/random.hpp"
#include "sim/phantom/template_channels.hpp"

namespace rtf::sim {
namespace {

struct Accumulator {  // streaming least-squares residual of a voxel's noise against an orthonormal basis
  double sum_y = 0.0, sum_n2 = 0.0;
  double proj[3] = {0.0, 0.0, 0.0};
};

}  // namespace

SynthesisResult synthesize(const SynthesisInputs& in) {
  const auto start = std::chrono::steady_clock::now();
  const PhantomSpec& spec = *in.spec;
  const EpiGrid& grid = *in.grid;
  const Design& design = *in.design;
  const int64_t nx = grid.dims[0], ny = grid.dims[1], nz = grid.dims[2], nt = spec.volumes;
  const int64_t nvox = grid.voxels();
  const int conditions = static_cast<int>(design.conditions().size());
  const double run_s = static_cast<double>(nt) * spec.tr_s;

  const NoiseLevels& levels = in.levels;
  const VoxelFields fields = make_voxel_fields(grid, spec.seed);
  Rng rate_rng(spec.seed, kStreamPhysioRates);
  const PhysioRhythm cardiac(spec.cardiac_hz, 0.05, rate_rng);
  const PhysioRhythm respiratory(spec.respiratory_hz, 0.10, rate_rng);

  const VoxelSampler sampler(*in.signal, grid, spec.supersample);
  std::vector<Eigen::Matrix4d> to_template(static_cast<size_t>(nt));
  for (int64_t t = 0; t < nt; ++t) {
    to_template[static_cast<size_t>(t)] =
        sampler.epi_to_template(rigid_matrix((*in.motion)[static_cast<size_t>(t)], grid.centre_mm));
  }
  // Orthonormal constant, linear and quadratic trends for the tSNR measurement.
  const int trend_columns = nt > 3 && static_cast<int64_t>(in.measure.size()) == nvox ? 3 : 0;
  const Eigen::MatrixXd trend = trend_columns > 0 ? orthonormal_basis(legendre_basis(nt, 2)) : Eigen::MatrixXd();

  SynthesisResult result;
  result.bold = Image(grid.header(nt, spec.tr_s));
  std::vector<Accumulator> acc(static_cast<size_t>(nvox));
  float* out = result.bold.data().data();
  const int nc = sampler.channels();
  const bool noisy = levels.thermal_sd > 0.0;
  const bool rician = spec.noise == NoiseDistribution::kRician;

  std::atomic<int64_t> next_slice{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto worker = [&] {
    try {
      std::vector<float> row(static_cast<size_t>(nx * nc));
      std::vector<double> x_c(static_cast<size_t>(conditions));
      for (int64_t z = next_slice++; z < nz; z = next_slice++) {
        Rng rng(spec.seed, kStreamThermal, static_cast<uint64_t>(z));
        const double slice_offset = in.slice_times_s[static_cast<size_t>(z)];
        for (int64_t t = 0; t < nt; ++t) {
          const double time = static_cast<double>(t) * spec.tr_s + slice_offset;
          for (int c = 0; c < conditions; ++c) x_c[static_cast<size_t>(c)] = design.value(c, time);
          const double pc = cardiac.phase(time), pr = respiratory.phase(time);
          const auto sc = static_cast<float>(std::sin(pc)), cc = static_cast<float>(std::cos(pc));
          const auto sr = static_cast<float>(std::sin(pr)), cr = static_cast<float>(std::cos(pr));
          const double drift = levels.drift_fraction * drift_shape(time, run_s);
          for (int64_t y = 0; y < ny; ++y) {
            const bool any = sampler.sample_row(to_template[static_cast<size_t>(t)], y, z, row.data());
            const int64_t row_index = (z * ny + y) * nx;
            float* dst = out + t * nvox + row_index;
            for (int64_t x = 0; x < nx; ++x) {
              const auto v = static_cast<size_t>(row_index + x);
              double s = 0.0, clean = 0.0;
              if (any) {
                const float* ch = row.data() + x * nc;
                s = ch[kBaselineChannel];
                for (int c = 0; c < conditions; ++c) s += ch[kFirstActivationChannel + c] * x_c[static_cast<size_t>(c)];
                const double physio = levels.physio_amplitude * ch[kPhysioChannel] *
                                      (sc * fields.cardiac_cos[v] + cc * fields.cardiac_sin[v] +
                                       sr * fields.respiratory_cos[v] + cr * fields.respiratory_sin[v]);
                const double gain = 1.0 + drift * fields.drift_gain[v];
                s *= gain;
                clean = s + physio * gain;
              }
              double value = clean;
              if (noisy) {
                const double n1 = levels.thermal_sd * rng.normal();
                const double n2 = levels.thermal_sd * rng.normal();
                value = rician ? std::sqrt((clean + n1) * (clean + n1) + n2 * n2) : clean + n1;
              }
              dst[x] = static_cast<float>(value);
              if (trend_columns > 0 && in.measure[v]) {
                Accumulator& a = acc[v];
                const double noise = value - s;
                a.sum_y += value;
                a.sum_n2 += noise * noise;
                for (int k = 0; k < trend_columns; ++k) a.proj[k] += noise * trend(t, k);
              }
            }
          }
        }
      }
    } catch (...) {
      const std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next_slice = nz;
    }
  };
  const int threads = static_cast<int>(
      std::clamp<int64_t>(spec.threads > 0 ? spec.threads : std::max(1u, std::thread::hardware_concurrency()), 1, nz));
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  if (failure) std::rethrow_exception(failure);

  result.tsnr.assign(static_cast<size_t>(nvox), std::numeric_limits<float>::quiet_NaN());
  if (trend_columns > 0) {
    for (size_t v = 0; v < acc.size(); ++v) {
      if (!in.measure[v]) continue;
      const Accumulator& a = acc[v];
      double rss = a.sum_n2;
      for (int k = 0; k < trend_columns; ++k) rss -= a.proj[k] * a.proj[k];
      const double sd = std::sqrt(std::max(0.0, rss) / static_cast<double>(nt - trend_columns));
      const double mean = a.sum_y / static_cast<double>(nt);
      result.tsnr[v] = sd > 0.0 ? static_cast<float>(mean / sd) : std::numeric_limits<float>::infinity();
    }
  }
  result.threads = threads;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace rtf::sim
