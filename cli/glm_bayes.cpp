// The masked voxels' series to the Gibbs sampler, its summaries back into volumes, R-hat and ESS into the JSON.
#include "cli/glm_bayes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>

#include "core/glm/bayes_glm.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"

namespace rtf::cli {

namespace {

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

}  // namespace

void run_bayes_glm(const BayesGlmCli& options, Device& device, const Image& bold, const DesignMatrix& design,
                   const std::vector<GlmContrast>& contrasts, const std::vector<std::string>& contrast_files,
                   const std::vector<uint8_t>& mask, const std::string& out) {
  for (const GlmContrast& c : contrasts) {
    if (c.is_f()) throw std::invalid_argument(fmt::format("--bayes: contrast {} is an F contrast (t only)", c.name));
  }
  if (contrasts.empty()) throw std::invalid_argument("--bayes needs at least one t contrast");
  std::vector<size_t> voxels;
  for (size_t v = 0; v < mask.size(); ++v) {
    if (mask[v] != 0) voxels.push_back(v);
  }
  if (voxels.empty()) throw std::invalid_argument("--bayes: the mask is empty");
  const auto t = static_cast<size_t>(bold.nt());
  std::vector<float> series(voxels.size() * t);
  for (size_t k = 0; k < voxels.size(); ++k) {
    for (size_t s = 0; s < t; ++s) series[k * t + s] = bold.volume(static_cast<int64_t>(s))[voxels[k]];
  }
  Eigen::MatrixXd weights(static_cast<Eigen::Index>(contrasts.size()), design.x.cols());
  for (size_t k = 0; k < contrasts.size(); ++k) weights.row(static_cast<Eigen::Index>(k)) = contrasts[k].weights;
  const BayesGlmSummary s =
      bayes_glm_summary(device, series, static_cast<int>(voxels.size()), design.x, weights, {}, options.seed,
                        options.chains, options.burn_in + options.draws, options.burn_in, 0.0, options.order);
  ImageHeader h = bold.header();
  h.num_volumes = 1;
  const auto map = [&](const std::vector<double>& values) {
    Image image(h, std::numeric_limits<float>::quiet_NaN());
    for (size_t k = 0; k < voxels.size(); ++k) image.data()[voxels[k]] = static_cast<float>(values[k]);
    return image;
  };
  const auto nc = contrasts.size();
  const int order = options.order;
  nlohmann::json summary{
      {"model", fmt::format("Bayesian GLM, AR({}) noise, Gibbs sampler (docs/algorithms/bayes_glm.md)", order)},
      {"ar_order", order},
      {"columns", design.names()},
      {"voxels", voxels.size()},
      {"chains", options.chains},
      {"draws_per_chain", options.draws},
      {"burn_in", options.burn_in},
      {"seed", options.seed},
      {"contrasts", nlohmann::json::array()}};
  for (size_t k = 0; k < nc; ++k) {
    const std::string base = out + "_contrast-" + contrast_files[k];
    write_nifti(base + "_stat-postmean.nii.gz", map(s.mean[k]));
    write_nifti(base + "_stat-postsd.nii.gz", map(s.sd[k]));
    write_nifti(base + "_stat-ppm.nii.gz", map(s.ppm[k]));
    const auto confident = std::count_if(s.ppm[k].begin(), s.ppm[k].end(), [](double p) { return p > 0.95; });
    fmt::print("  {}: {} voxels with P(effect > 0) > 0.95, split-R-hat median {:.4f}\n", contrasts[k].name, confident,
               describe(s.r_hat[k], true).value("median", std::nan("")));
    summary["contrasts"].push_back({{"name", contrasts[k].name},
                                    {"voxels_ppm_above_0.95", confident},
                                    {"split_r_hat", describe(s.r_hat[k], true)},
                                    {"ess", describe(s.ess[k], false)}});
  }
  write_nifti(out + "_sigma2_postmean.nii.gz", map(s.mean[nc]));
  if (order == 1) {
    write_nifti(out + "_ar_postmean.nii.gz", map(s.mean[nc + 1]));
  } else {
    ImageHeader h4 = bold.header();
    h4.num_volumes = order;
    Image rho(h4, std::numeric_limits<float>::quiet_NaN());
    for (int k = 0; k < order; ++k) {
      const std::vector<double>& values = s.mean[nc + 1 + static_cast<size_t>(k)];
      const std::span<float> volume = rho.volume(k);
      for (size_t v = 0; v < voxels.size(); ++v) volume[voxels[v]] = static_cast<float>(values[v]);
    }
    write_nifti(out + "_ar_postmean.nii.gz", rho);
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
  write_text_atomically(out + "_glm.json", summary.dump(2) + "\n");
}

}  // namespace rtf::cli
