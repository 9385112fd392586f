// The masked voxels' series to the Gibbs sampler in blocks (one chunk of the scale-out job each), the blocks'
// summaries placed back per voxel on rank 0, into volumes, R-hat and ESS into the JSON.
#include "core/glm/bayes_glm_spread.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>
#include <stdexcept>

#include "core/glm/bayes_glm.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"
#include "core/scale/job_key.hpp"
#include "core/scale/voxel_blocks.hpp"
#include "core/util/progress_log.hpp"

namespace rtf {

namespace {

constexpr int64_t kMinChunkVoxels = 256;
constexpr int kChunksPerDevice = 4;

// Median, maximum (R-hat) or minimum (ESS) and the count above a bound, over finite values.
nlohmann::json describe(std::vector<double> values, bool r_hat) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double x) { return !std::isfinite(x); }), values.end());
  if (values.empty()) return nullptr;
  std::sort(values.begin(), values.end());
  const double median = values[values.size() / 2];
  if (r_hat) {
    const auto above = std::count_if(values.begin(), values.end(), [](double x) { return x > 1.01; });
    return {{"median", median}, {"max", values.back()}, {"voxels_above_1.01", above}};
  }
  return {{"median", median}, {"min", values.front()}};
}

// A block's summaries: per quantity its voxels' mean, SD, R-hat and ESS, then per contrast the PPM.
ChunkBytes pack_block(const BayesGlmSummary& s) {
  ChunkWriter w;
  w.value(static_cast<int32_t>(s.voxels));
  for (const auto* table : {&s.mean, &s.sd, &s.r_hat, &s.ess, &s.ppm}) {
    for (const std::vector<double>& values : *table) w.values(values);
  }
  return w.take();
}

// Places block `bytes` of voxels [begin, begin + count) into `whole`.
void unpack_block(const ChunkBytes& bytes, int64_t begin, int64_t count, BayesGlmSummary& whole) {
  ChunkReader r(bytes);
  bool ok = r.value<int32_t>() == count;
  for (auto* table : {&whole.mean, &whole.sd, &whole.r_hat, &whole.ess, &whole.ppm}) {
    for (std::vector<double>& values : *table) {
      const std::vector<double> block = r.values<double>();
      ok = ok && static_cast<int64_t>(block.size()) == count;
      if (!ok) break;
      std::copy(block.begin(), block.end(), values.begin() + begin);
    }
  }
  if (!ok || !r.done())
    throw std::runtime_error(fmt::format("--bayes: a block's result does not hold {} voxels", count));
}

// The mask's voxels and their series, [voxel][time]; throws for an empty mask.
std::vector<size_t> mask_voxels(const std::vector<uint8_t>& mask) {
  std::vector<size_t> voxels;
  for (size_t v = 0; v < mask.size(); ++v) {
    if (mask[v] != 0) voxels.push_back(v);
  }
  if (voxels.empty()) throw std::invalid_argument("--bayes: the mask is empty");
  return voxels;
}

// Every block's summaries placed per voxel (rank 0).
BayesGlmSummary join_blocks(const std::vector<ChunkBytes>& results, const VoxelBlocks& blocks, size_t contrasts,
                            int order) {
  BayesGlmSummary s;
  s.voxels = static_cast<int>(blocks.voxels);
  s.contrasts = static_cast<int>(contrasts);
  s.order = order;
  const auto grid = [&](size_t rows) {
    return std::vector<std::vector<double>>(rows, std::vector<double>(static_cast<size_t>(blocks.voxels)));
  };
  s.mean = s.sd = s.r_hat = s.ess = grid(contrasts + 1 + static_cast<size_t>(order));
  s.ppm = grid(contrasts);
  for (int64_t k = 0; k < blocks.count(); ++k) {
    unpack_block(results[static_cast<size_t>(k)], blocks.begin(k), blocks.size(k), s);
  }
  return s;
}

// The maps and PREFIX_glm.json into `outputs` (rank 0).
void write_summary(const BayesGlmOptions& options, const BayesGlmSummary& s, const Image& bold,
                   const std::vector<GlmContrast>& contrasts, const std::vector<std::string>& contrast_files,
                   const std::vector<size_t>& voxels, nlohmann::json summary, const std::string& out,
                   io::OutputSet& outputs) {
  ImageHeader h = bold.header();
  h.num_volumes = 1;
  const auto map = [&](const std::vector<double>& values) {
    Image image(h, std::numeric_limits<float>::quiet_NaN());
    for (size_t k = 0; k < voxels.size(); ++k) image.data()[voxels[k]] = static_cast<float>(values[k]);
    return image;
  };
  const auto nc = contrasts.size();
  const int order = options.order;
  for (size_t k = 0; k < nc; ++k) {
    const std::string base = out + "_contrast-" + contrast_files[k];
    write_nifti(outputs.add(base + "_stat-postmean.nii.gz"), map(s.mean[k]));
    write_nifti(outputs.add(base + "_stat-postsd.nii.gz"), map(s.sd[k]));
    write_nifti(outputs.add(base + "_stat-ppm.nii.gz"), map(s.ppm[k]));
    const auto confident = std::count_if(s.ppm[k].begin(), s.ppm[k].end(), [](double p) { return p > 0.95; });
    fmt::print("  {}: {} voxels with P(effect > 0) > 0.95, split-R-hat median {:.4f}\n", contrasts[k].name, confident,
               describe(s.r_hat[k], true).value("median", std::nan("")));
    summary["contrasts"].push_back({{"name", contrasts[k].name},
                                    {"voxels_ppm_above_0.95", confident},
                                    {"split_r_hat", describe(s.r_hat[k], true)},
                                    {"ess", describe(s.ess[k], false)}});
  }
  write_nifti(outputs.add(out + "_sigma2_postmean.nii.gz"), map(s.mean[nc]));
  if (order == 1) {
    write_nifti(outputs.add(out + "_ar_postmean.nii.gz"), map(s.mean[nc + 1]));
  } else {
    ImageHeader h4 = bold.header();
    h4.num_volumes = order;
    Image rho(h4, std::numeric_limits<float>::quiet_NaN());
    for (int k = 0; k < order; ++k) {
      const std::vector<double>& values = s.mean[nc + 1 + static_cast<size_t>(k)];
      const std::span<float> volume = rho.volume(k);
      for (size_t v = 0; v < voxels.size(); ++v) volume[voxels[v]] = static_cast<float>(values[v]);
    }
    write_nifti(outputs.add(out + "_ar_postmean.nii.gz"), rho);
  }
  summary["sigma2"] = {{"split_r_hat", describe(s.r_hat[nc], true)}, {"ess", describe(s.ess[nc], false)}};
  if (order == 1) {
    summary["ar1"] = {{"split_r_hat", describe(s.r_hat[nc + 1], true)}, {"ess", describe(s.ess[nc + 1], false)}};
  }
  summary["ar"] = nlohmann::json::array();
  for (int k = 0; k < order; ++k) {
    const size_t q = nc + 1 + static_cast<size_t>(k);
    summary["ar"].push_back(
        {{"coefficient", k + 1}, {"split_r_hat", describe(s.r_hat[q], true)}, {"ess", describe(s.ess[q], false)}});
  }
  write_text_atomically(outputs.add(out + "_glm.json"), summary.dump(2) + "\n");
}

}  // namespace

void run_bayes_glm(const BayesGlmOptions& options, ScaleOut& scale, const Image& bold, const DesignMatrix& design,
                   const std::vector<GlmContrast>& contrasts, const std::vector<std::string>& contrast_files,
                   const std::vector<uint8_t>& mask, const std::string& out, io::OutputSet& outputs) {
  for (const GlmContrast& c : contrasts) {
    if (c.is_f()) throw std::invalid_argument(fmt::format("--bayes: contrast {} is an F contrast (t only)", c.name));
  }
  if (contrasts.empty()) throw std::invalid_argument("--bayes needs at least one t contrast");
  const std::vector<size_t> voxels = mask_voxels(mask);
  const auto t = static_cast<size_t>(bold.nt());
  std::vector<float> series(voxels.size() * t);
  for (size_t k = 0; k < voxels.size(); ++k) {
    for (size_t s = 0; s < t; ++s) series[k * t + s] = bold.volume(static_cast<int64_t>(s))[voxels[k]];
  }
  Eigen::MatrixXd weights(static_cast<Eigen::Index>(contrasts.size()), design.x.cols());
  for (size_t k = 0; k < contrasts.size(); ++k) weights.row(static_cast<Eigen::Index>(k)) = contrasts[k].weights;
  const auto columns = static_cast<int>(design.x.cols());
  if (columns > kBayesMaxRegressors || bold.nt() < columns + options.order + 1) {
    throw std::invalid_argument(fmt::format("--bayes: {} design columns (at most {}) and {} volumes (at least {})",
                                            columns, kBayesMaxRegressors, bold.nt(), columns + options.order + 1));
  }
  // Blocks of mask voxels: their boundaries change no chain, so they are sized from the devices.
  const VoxelBlocks blocks = voxel_blocks(static_cast<int64_t>(voxels.size()), options.chunk_voxels,
                                          scale.workers().total_devices(), kChunksPerDevice, kMinChunkVoxels);
  const int steps = options.burn_in + options.draws;
  const BayesGlmPrior prior;
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const RowMajor x = design.x, c = weights;
  ChunkJob job;
  job.name = "glm --bayes voxels";
  job.chunks = blocks.count();
  job.key = job_key(fmt::format("glm --bayes v1; voxels {}; per chunk {}; chains {}; steps {}; burn-in {}; order {}; "
                                "seed {}; prior {:a} {:a} {:a} {:a}",
                                blocks.voxels, blocks.per_block, options.chains, steps, options.burn_in, options.order,
                                options.seed, prior.a0, prior.b0, prior.beta_precision, prior.rho_precision),
                    {bytes_of(x), bytes_of(c), bytes_of(series)});
  job.chunk_dir = out + "_chunks";
  job.compute = [&](Device& device, int, int64_t chunk) {
    const int64_t begin = blocks.begin(chunk), end = blocks.end(chunk);
    const std::vector<float> block(series.begin() + begin * static_cast<int64_t>(t),
                                   series.begin() + end * static_cast<int64_t>(t));
    return pack_block(bayes_glm_summary(device, block, static_cast<int>(end - begin), design.x, weights, prior,
                                        options.seed, options.chains, steps, options.burn_in, 0.0, options.order,
                                        static_cast<uint32_t>(begin)));
  };
  ProgressLog progress("--bayes blocks", 2.0);
  const std::vector<ChunkBytes> results = scale.run(job, std::ref(progress));
  const nlohmann::json devices = scale.devices_report(blocks.count(), blocks.per_block);
  if (!scale.root()) return;  // rank 0 writes

  const BayesGlmSummary s = join_blocks(results, blocks, contrasts.size(), options.order);
  const nlohmann::json summary{
      {"model", fmt::format("Bayesian GLM, AR({}) noise, Gibbs sampler (docs/algorithms/bayes_glm.md)", options.order)},
      {"ar_order", options.order},
      {"columns", design.names()},
      {"voxels", voxels.size()},
      {"chains", options.chains},
      {"draws_per_chain", options.draws},
      {"burn_in", options.burn_in},
      {"seed", options.seed},
      {"devices", devices},  // where it ran (differs between runs of the same result): one key
      {"contrasts", nlohmann::json::array()}};
  write_summary(options, s, bold, contrasts, contrast_files, voxels, summary, out, outputs);
  scale.commit(outputs, job.chunk_dir);  // the outputs are whole: the finished blocks are no longer needed
}

}  // namespace rtf
