// Brain mask: the temporal mean on the host's cores, device smoothing, device sum for the mean, device threshold.
#include "core/mask/brain_mask.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/device/launch.hpp"
#include "core/filters/device_reduce.hpp"
#include "core/filters/gaussian_smoothing.hpp"
#include "core/util/host_threads.hpp"

namespace rtf {

Image mask_source_volume(const Image& series, int64_t volume) {
  if (volume >= series.nt() || volume < -1) {
    throw std::invalid_argument(fmt::format("mask: volume {} requested, series has {}", volume, series.nt()));
  }
  if (volume >= 0) return series.extract_volume(volume);
  ImageHeader h = series.header();
  h.num_volumes = 1;
  Image mean(h);
  const auto nvox = static_cast<size_t>(h.voxels_per_volume());
  // Each thread its own range of voxels, summed over the volumes in order: the same sums on any number of cores.
  const size_t workers = std::min(host_thread_count(), nvox * static_cast<size_t>(series.nt()) / (size_t{1} << 20) + 1);
  host_ranges(nvox, workers, [&](size_t begin, size_t end, size_t) {
    std::vector<double> acc(end - begin, 0.0);
    for (int64_t t = 0; t < series.nt(); ++t) {
      const float* v = series.volume(t).data() + begin;
      for (size_t i = 0; i < acc.size(); ++i) acc[i] += v[i];
    }
    for (size_t i = 0; i < acc.size(); ++i) {
      mean.data()[begin + i] = static_cast<float>(acc[i] / static_cast<double>(series.nt()));
    }
  });
  return mean;
}

BrainMask compute_brain_mask(Device& device, const Image& series, const BrainMaskSpec& spec) {
  if (!(spec.fraction > 0.0)) throw std::invalid_argument(fmt::format("mask: fraction {} must be > 0", spec.fraction));
  const Image source = mask_source_volume(series, spec.volume);
  for (float v : source.data()) {
    if (!std::isfinite(v)) throw std::invalid_argument("mask: the source volume contains NaN or infinite values");
  }
  const auto& h = source.header();
  const auto nvox = static_cast<size_t>(h.voxels_per_volume());

  GaussianSmoother smoother(device, h.dims, h.voxel_mm, {.fwhm_mm = spec.fwhm_mm, .truncate_sigmas = 4.0});
  DeviceBuffer<float> raw(device, nvox), smoothed(device, nvox);
  raw.write(device.queue(), source.data());
  smoother.enqueue(raw, smoothed, 1);

  DeviceSum summer(device);
  const double mean = summer.sum(smoothed, nvox) / static_cast<double>(nvox);
  BrainMask result;
  result.threshold = spec.fraction * mean;

  DeviceBuffer<uint8_t> mask(device, nvox);
  ClKernel kernel = device.kernel("threshold.cl", "threshold_above");
  const float threshold = static_cast<float>(result.threshold);
  const int n = static_cast<int>(nvox);
  set_args(kernel, smoothed, mask, threshold, n);
  launch<1>(device.queue(), kernel, {nvox}, {64});
  result.inside = mask.read_all(device.queue());
  result.count = std::count(result.inside.begin(), result.inside.end(), uint8_t{1});
  return result;
}

}  // namespace rtf
