// sample_features: each run's feature series gathered on the host (checked for NaNs and constant series on the way),
// uploaded, detrended in place, then z-scored into its sample rows; one run's series on the device at a time.
#include "core/decoding/sample_features.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/device/launch.hpp"
#include "core/temporal/detrend.hpp"

namespace rtf {

int64_t sample_feature_bytes(int64_t samples, int64_t features, int64_t longest_run) {
  return (samples + longest_run) * features * static_cast<int64_t>(sizeof(float));
}

namespace {

void check_fits(const Device& device, int64_t n, int64_t p, int64_t longest) {
  const int64_t x_bytes = n * p * static_cast<int64_t>(sizeof(float));
  const int64_t series_bytes = longest * p * static_cast<int64_t>(sizeof(float));
  const DeviceInfo& info = device.info();
  const auto largest = static_cast<int64_t>(info.max_alloc_bytes), global = static_cast<int64_t>(info.global_mem_bytes);
  if (std::max(x_bytes, series_bytes) > largest || sample_feature_bytes(n, p, longest) > global / 10 * 8) {
    throw std::invalid_argument(fmt::format(
        "decoding: {} samples x {} features need {:.1f} MiB on the device ({:.1f} MiB for the samples, {:.1f} MiB for "
        "a "
        "run's series); {} holds {:.1f} MiB in one buffer and {:.1f} MiB in all: use a smaller mask",
        n, p, static_cast<double>(sample_feature_bytes(n, p, longest)) / 1048576.0,
        static_cast<double>(x_bytes) / 1048576.0, static_cast<double>(series_bytes) / 1048576.0, info.device_name,
        static_cast<double>(largest) / 1048576.0, static_cast<double>(global) / 1048576.0));
  }
}

// The run's feature series, volume-major [t][feature], and which features are constant over the run.
void gather_run(const Image& run, size_t run_index, std::span<const int> voxels, std::vector<float>& series,
                std::vector<uint8_t>& constant) {
  const auto p = voxels.size();
  const auto nt = static_cast<size_t>(run.nt());
  series.resize(nt * p);
  constant.assign(p, 1);
  for (size_t t = 0; t < nt; ++t) {
    const std::span<const float> volume = run.volume(static_cast<int64_t>(t));
    float* row = series.data() + t * p;
    for (size_t f = 0; f < p; ++f) {
      const float v = volume[static_cast<size_t>(voxels[f])];
      if (!std::isfinite(v)) {
        const int64_t nx = run.nx(), ny = run.ny(), voxel = voxels[f];
        throw std::invalid_argument(fmt::format("run {}: volume {} has {} at voxel ({}, {}, {}) of the mask",
                                                run_index + 1, t, v, voxel % nx, voxel / nx % ny, voxel / (nx * ny)));
      }
      row[f] = v;
      if (t > 0 && v != series[f]) constant[f] = 0;
    }
  }
}

}  // namespace

SampleFeatures sample_features(Device& device, std::span<const Image* const> runs, std::span<const int> voxels,
                               const DecodingSamples& samples, const FeatureOptions& options) {
  if (voxels.empty()) throw std::invalid_argument("decoding: the mask holds no voxel");
  const auto n = static_cast<int64_t>(samples.size());
  const auto p = static_cast<int64_t>(voxels.size());
  int64_t longest = 0;
  for (const Image* r : runs) longest = std::max(longest, r->nt());
  check_fits(device, n, p, longest);

  SampleFeatures out;
  out.samples = n;
  out.features = p;
  out.x = DeviceBuffer<float>(device, static_cast<size_t>(n * p));
  const cl_command_queue q = device.queue();
  const bool detrend = options.poly_order.has_value() || options.highpass_cutoff_s.has_value();
  std::vector<float> series;
  std::vector<uint8_t> constant, ever_constant(static_cast<size_t>(p), 0);
  for (size_t r = 0; r < runs.size(); ++r) {
    const Image& run = *runs[r];
    std::vector<int> rows(static_cast<size_t>(run.nt()), -1);
    for (size_t i = 0; i < samples.size(); ++i) {
      if (samples.run[i] == static_cast<int>(r)) rows[static_cast<size_t>(samples.volume[i])] = static_cast<int>(i);
    }
    if (std::all_of(rows.begin(), rows.end(), [](int row) { return row < 0; })) continue;
    gather_run(run, r, voxels, series, constant);
    for (size_t f = 0; f < constant.size(); ++f) ever_constant[f] |= constant[f];
    DeviceBuffer<float> series_buffer(device, series.size());
    DeviceBuffer<int> rows_buffer(device, rows.size());
    DeviceBuffer<uint8_t> constant_buffer(device, constant.size());
    series_buffer.write(q, series);
    rows_buffer.write(q, rows);
    constant_buffer.write(q, constant);
    if (detrend) {
      DetrendSpec spec{options.poly_order, options.highpass_cutoff_s, true};
      Detrender detrender(device, p, run.nt(), run.header().tr_s > 0 ? run.header().tr_s : 1.0, spec);
      detrender.enqueue(series_buffer, series_buffer);
    }
    ClKernel kernel = device.kernel(
        "decoding_features.cl", "decoding_features",
        {fmt::format("T={}", run.nt()), fmt::format("P={}", p), fmt::format("ZSCORE={}", options.zscore ? 1 : 0)});
    set_args(kernel, series_buffer, rows_buffer, constant_buffer, out.x);
    launch<1>(q, kernel, {static_cast<size_t>(p)}, {64}, {}, EventMode::kNone);
    device.finish();  // the run's buffers go out of scope
  }
  out.constant_features = std::count(ever_constant.begin(), ever_constant.end(), uint8_t{1});
  return out;
}

}  // namespace rtf
