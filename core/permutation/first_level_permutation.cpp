// First-level permutation test: null data on the host (double), surrogates, smoothing and AR fits on the device in
// batches, maxima and cluster statistics per batch, FWE p maps.
#include "core/permutation/first_level_permutation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "core/device/launch.hpp"
#include "core/filters/gaussian_smoothing.hpp"
#include "core/permutation/clusters.hpp"
#include "core/permutation/fwe.hpp"
#include "core/permutation/tfce.hpp"

namespace rtf {

namespace {

std::vector<int> nuisance_columns(const Eigen::MatrixXd& design, const std::vector<GlmContrast>& contrasts) {
  std::vector<int> out;
  for (Eigen::Index j = 0; j < design.cols(); ++j) {
    bool weighed = false;
    for (const GlmContrast& c : contrasts) weighed = weighed || (c.weights.col(j).array() != 0.0).any();
    if (!weighed) out.push_back(static_cast<int>(j));
  }
  return out;
}

}  // namespace

ArNullOnDevice prepare_ar_null(Device& device, const DeviceBuffer<float>& series, const ImageHeader& grid,
                               const Eigen::MatrixXd& design, const std::vector<GlmContrast>& contrasts,
                               const std::vector<uint8_t>& mask, const ArGlmOptions& options) {
  const int n = static_cast<int>(grid.num_volumes), order = options.order;
  const size_t volume = static_cast<size_t>(grid.voxels_per_volume());
  if (design.rows() != n) {
    throw std::invalid_argument(fmt::format("permutation test: {} design rows for {} volumes", design.rows(), n));
  }
  if (mask.size() != volume) throw std::invalid_argument("permutation test: the mask's grid differs from the data's");
  if (series.size() < static_cast<size_t>(n) * volume) throw std::invalid_argument("permutation test: short series");
  std::vector<int32_t> voxels;
  for (size_t v = 0; v < volume; ++v) {
    if (mask[v]) voxels.push_back(static_cast<int32_t>(v));
  }
  if (voxels.empty()) throw std::invalid_argument("permutation test: the mask is empty");
  ArNullOnDevice null;
  null.nuisance = nuisance_columns(design, contrasts);
  // Q: an orthonormal basis of the nuisance columns' span (thin SVD, the GLM's rank rule).
  Eigen::MatrixXd q(n, 0);
  if (!null.nuisance.empty()) {
    Eigen::MatrixXd z(n, static_cast<Eigen::Index>(null.nuisance.size()));
    for (size_t j = 0; j < null.nuisance.size(); ++j)
      z.col(static_cast<Eigen::Index>(j)) = design.col(null.nuisance[j]);
    q = make_ar_glm_model(z, {}, 1).basis;
  }
  const auto zc = static_cast<int>(q.cols());
  std::vector<float> q_values(static_cast<size_t>(std::max(1, n * zc)), 0.0f);
  for (int t = 0; t < n; ++t) {
    for (int j = 0; j < zc; ++j) q_values[static_cast<size_t>(t * zc + j)] = static_cast<float>(q(t, j));
  }
  const cl_command_queue queue = device.queue();
  const std::vector<std::string> defines{fmt::format("N={}", n), fmt::format("P={}", order), fmt::format("Z={}", zc)};
  ClKernel estimate = device.kernel("ar_null.cl", "ar_null_estimate", defines);
  ClKernel whiten = device.kernel("ar_null.cl", "ar_null_whiten", defines);
  DeviceBuffer<float> q_buffer(device, q_values.size(), CL_MEM_READ_ONLY);
  q_buffer.write(queue, q_values);
  DeviceBuffer<int32_t> voxel(device, voxels.size(), CL_MEM_READ_ONLY);
  voxel.write(queue, voxels);
  const int vm = static_cast<int>(voxels.size()), vol = static_cast<int>(volume);
  DeviceBuffer<float> coef(device, static_cast<size_t>(std::max(1, zc)) * voxels.size());
  null.rho = DeviceBuffer<float>(device, static_cast<size_t>(order) * volume);
  null.rho.fill(queue, 0.0f);
  set_args(estimate, series, voxel, q_buffer, vm, vol, coef, null.rho);
  launch<1>(queue, estimate, {voxels.size()}, {64}, {}, EventMode::kNone);
  if (options.ar_fwhm_mm > 0) {
    GaussianSmoother smoother(device, grid.dims, grid.voxel_mm,
                              SmoothingSpec{.fwhm_mm = options.ar_fwhm_mm, .path = SmoothingPath::kSeparablePasses},
                              std::span<const uint8_t>(mask), order);
    DeviceBuffer<float> smoothed(device, null.rho.size());
    smoother.enqueue(null.rho, smoothed, order);
    null.rho = std::move(smoothed);
  }
  null.whitened = DeviceBuffer<float>(device, static_cast<size_t>(n) * volume);
  null.whitened.fill(queue, 0.0f);
  set_args(whiten, series, voxel, q_buffer, vm, vol, coef, null.rho, null.whitened);
  launch<1>(queue, whiten, {voxels.size()}, {64}, {}, EventMode::kNone);
  RTF_CL_CHECK(clFinish(queue));
  return null;
}

ArNullData prepare_ar_null(Device& device, const Image& bold, const Eigen::MatrixXd& design,
                           const std::vector<GlmContrast>& contrasts, const std::vector<uint8_t>& mask,
                           const ArGlmOptions& options) {
  DeviceBuffer<float> series(device, bold.data().size());
  series.write(device.queue(), bold.data());
  const ArNullOnDevice on_device = prepare_ar_null(device, series, bold.header(), design, contrasts, mask, options);
  return {on_device.whitened.read_all(device.queue()), on_device.rho.read_all(device.queue()), on_device.nuisance};
}

FirstLevelPermutationResult first_level_permutation_test(Device& device, const Image& bold,
                                                         const Eigen::MatrixXd& design,
                                                         const std::vector<GlmContrast>& contrasts,
                                                         const std::vector<uint8_t>& mask,
                                                         const FirstLevelPermutationOptions& options,
                                                         const PermutationProgress& progress) {
  if (options.permutations < 2) throw std::invalid_argument("permutation test: at least 2 permutations");
  if (contrasts.empty()) throw std::invalid_argument("permutation test: no contrast");
  const int n = static_cast<int>(bold.nt()), order = options.ar.order;
  const ImageHeader& h = bold.header();
  const size_t volume = static_cast<size_t>(h.voxels_per_volume());
  const ArGlmModel model = make_ar_glm_model(design, contrasts, order);
  const PermutationSet set = make_permutation_set(options.kind, n, options.permutations, options.seed);
  const int batch = std::max(1, std::min(options.max_batch, set.count - 1));
  const cl_command_queue q = device.queue();

  ArGlm glm(device, h.dims, h.voxel_mm, mask, model, options.ar, batch);
  const size_t vm = glm.mask_voxels();
  const size_t series = static_cast<size_t>(n) * volume;
  DeviceBuffer<float> surrogates(device, static_cast<size_t>(batch) * series);
  surrogates.fill(q, 0.0f);
  std::unique_ptr<GaussianSmoother> smoother;
  std::unique_ptr<DeviceBuffer<float>> smoothed;
  if (options.fwhm_mm > 0) {
    smoother = std::make_unique<GaussianSmoother>(
        device, h.dims, h.voxel_mm, SmoothingSpec{.fwhm_mm = options.fwhm_mm, .path = SmoothingPath::kSeparablePasses},
        std::span<const uint8_t>(mask), static_cast<int64_t>(batch) * n);
    smoothed = std::make_unique<DeviceBuffer<float>>(device, static_cast<size_t>(batch) * series);
  }
  // `input` holds `count` series; returns the buffer the GLM reads (smoothed when asked).
  const auto prepared = [&](DeviceBuffer<float>& input, int count) -> const DeviceBuffer<float>& {
    if (!smoother) return input;
    smoother->enqueue(input, *smoothed, static_cast<int64_t>(count) * n);
    return *smoothed;
  };

  FirstLevelPermutationResult result;
  result.count = set.count;
  result.exhaustive = set.exhaustive;
  result.voxels = glm.mask_voxels_index();
  const size_t ns = model.statistics.size();
  result.contrasts.resize(ns);

  // The null data, and the observed statistics: the data themselves through the same smoothing and fit.
  surrogates.write(q, bold.data());
  const ArNullOnDevice null = prepare_ar_null(device, surrogates, h, design, contrasts, mask, options.ar);
  glm.fit(prepared(surrogates, 1), 1);
  const std::vector<float> observed_max = glm.maxima(1);
  const bool clusters_on = options.cluster_extent || options.cluster_mass;
  std::unique_ptr<ClusterStatistics> clusters;
  std::unique_ptr<TfceStatistics> tfce;
  if (clusters_on) clusters = std::make_unique<ClusterStatistics>(device, h.dims, mask, options.connectivity, batch);
  if (options.tfce) {
    tfce = std::make_unique<TfceStatistics>(device, h.dims, mask, options.connectivity, batch, options.tfce_E,
                                            options.tfce_H);
  }
  for (size_t s = 0; s < ns; ++s) {
    FirstLevelContrastResult& c = result.contrasts[s];
    c.is_f = model.statistics[s].is_f;
    c.observed.resize(vm);
    glm.statistics().read(q, c.observed, s * static_cast<size_t>(batch) * vm);
    c.max_null.assign(static_cast<size_t>(set.count), 0.0f);
    c.max_null[0] = observed_max[s];
    if (c.is_f) continue;
    if (clusters_on) {
      const ObservedClusters o = clusters->observed(c.observed, static_cast<float>(options.cluster_threshold));
      c.clusters = o.clusters;
      c.max_extent.assign(static_cast<size_t>(set.count), 0);
      c.max_mass.assign(static_cast<size_t>(set.count), 0.0);
      c.max_extent[0] = o.extent.empty() ? 0 : *std::max_element(o.extent.begin(), o.extent.end());
      c.max_mass[0] = o.mass.empty() ? 0.0 : *std::max_element(o.mass.begin(), o.mass.end());
      if (options.cluster_extent) c.clustere_corrp.assign(o.extent.begin(), o.extent.end());  // values for now
      if (options.cluster_mass) c.clusterm_corrp = o.mass;
    }
    if (options.tfce) {
      c.dh = std::max(std::isfinite(observed_max[s]) ? observed_max[s] : 0.0f, 1.0f) / 100.0f;
      const std::vector<float> t = tfce->tfce(c.observed, c.dh);
      c.tfce = t;
      c.max_tfce.assign(static_cast<size_t>(set.count), 0.0f);
      c.max_tfce[0] = t.empty() ? 0.0f : *std::max_element(t.begin(), t.end());
    }
  }

  // The surrogates, `batch` at a time.
  DeviceBuffer<int32_t> voxel(device, vm, CL_MEM_READ_ONLY);
  voxel.write(q, result.voxels);
  DeviceBuffer<int32_t> arrange(device, static_cast<size_t>(batch) * static_cast<size_t>(n), CL_MEM_READ_ONLY);
  ClKernel resample =
      device.kernel("ar_resample.cl", "ar_resample",
                    {fmt::format("N={}", n), fmt::format("P={}", order),
                     fmt::format("SIGNFLIP={}", options.kind == PermutationKind::kSignFlip ? 1 : 0), "WG=64"});
  DeviceBuffer<float> maps(device, (clusters_on || options.tfce) ? static_cast<size_t>(batch) * vm : 1);
  surrogates.fill(q, 0.0f);  // voxels outside the mask stay 0
  std::vector<int32_t> codes(static_cast<size_t>(batch) * static_cast<size_t>(n));
  for (int first = 1; first < set.count; first += batch) {
    const int count = std::min(batch, set.count - first);
    for (int b = 0; b < count; ++b) {
      for (int t = 0; t < n; ++t) {
        const size_t from = static_cast<size_t>(first + b) * static_cast<size_t>(n) + static_cast<size_t>(t);
        codes[static_cast<size_t>(b * n + t)] =
            set.kind == PermutationKind::kSignFlip ? set.signs[from] : set.order[from];
      }
    }
    arrange.write(q, std::span<const int32_t>(codes.data(), static_cast<size_t>(count) * static_cast<size_t>(n)));
    set_args(resample, null.whitened, voxel, null.rho, arrange, static_cast<int>(vm), static_cast<int>(volume),
             surrogates);
    launch<2>(q, resample, {vm, static_cast<size_t>(count)}, {64, 1}, {}, EventMode::kNone);
    glm.fit(prepared(surrogates, count), count);
    const std::vector<float> maxima = glm.maxima(count);
    for (size_t s = 0; s < ns; ++s) {
      FirstLevelContrastResult& c = result.contrasts[s];
      std::copy_n(maxima.begin() + static_cast<std::ptrdiff_t>(s * static_cast<size_t>(count)), count,
                  c.max_null.begin() + first);
      if (c.is_f || !(clusters_on || options.tfce)) continue;
      RTF_CL_CHECK(clEnqueueCopyBuffer(q, glm.statistics().get(), maps.get(),
                                       s * static_cast<size_t>(batch) * vm * sizeof(float), 0,
                                       static_cast<size_t>(count) * vm * sizeof(float), 0, nullptr, nullptr));
      if (clusters_on) {
        const ClusterMaxima m = clusters->maxima(maps, count, static_cast<float>(options.cluster_threshold));
        std::copy(m.extent.begin(), m.extent.end(), c.max_extent.begin() + first);
        std::copy(m.mass.begin(), m.mass.end(), c.max_mass.begin() + first);
      }
      if (options.tfce) {
        const std::vector<float> m = tfce->maxima(maps, count, c.dh);
        std::copy(m.begin(), m.end(), c.max_tfce.begin() + first);
      }
    }
    if (progress) progress(first + count, set.count);
  }

  for (FirstLevelContrastResult& c : result.contrasts) {
    // -inf (no finite voxel) counts as the lowest maximum.
    for (float& m : c.max_null) m = std::isfinite(m) ? m : -std::numeric_limits<float>::max();
    c.vox_corrp = fwe_one_minus_p(c.observed, c.max_null, 1e-5);
    if (!c.clustere_corrp.empty()) {
      const std::vector<int64_t> extent(c.clustere_corrp.begin(), c.clustere_corrp.end());
      c.clustere_corrp = fwe_one_minus_p(extent, c.max_extent, 0.0);
    }
    if (!c.clusterm_corrp.empty()) c.clusterm_corrp = fwe_one_minus_p(c.clusterm_corrp, c.max_mass, 1e-6);
    if (!c.tfce.empty()) c.tfce_corrp = fwe_one_minus_p(c.tfce, c.max_tfce, 1e-4);
  }
  return result;
}

}  // namespace rtf
