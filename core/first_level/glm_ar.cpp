// The AR(P) GLM's maps and per-contrast statistics, then the permutation test's corrected p maps and null
// distributions, into one OutputSet, with PREFIX_glm.json.
#include "core/first_level/glm_ar.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/first_level/glm_outputs.hpp"
#include "core/glm/ar_glm.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/io/voxel_values.hpp"
#include "core/permutation/first_level_permutation.hpp"
#include "core/permutation/fwe.hpp"
#include "core/util/progress_log.hpp"

namespace rtf {

namespace {

// A t contrast's effect map c'beta (NaN outside the fit).
Image effect_map(const Image& beta, const GlmContrast& con, const ImageHeader& grid) {
  const auto volume = static_cast<size_t>(grid.voxels_per_volume());
  ImageHeader h = grid;
  h.num_volumes = 1;
  Image effect(h, std::numeric_limits<float>::quiet_NaN());
  for (size_t v = 0; v < volume; ++v) {
    double e = 0.0;
    for (Eigen::Index j = 0; j < con.weights.cols(); ++j) {
      e += con.weights(0, j) * beta.data()[static_cast<size_t>(j) * volume + v];
    }
    effect.data()[v] = static_cast<float>(e);
  }
  return effect;
}

// Each contrast's statistic maps; returns the contrasts' entries of the report.
nlohmann::json write_contrasts(const GlmOptions& c, io::OutputSet& outputs, const ArGlmImages& fit,
                               const std::vector<GlmContrast>& contrasts, const ImageHeader& grid) {
  nlohmann::json entries = nlohmann::json::array();
  for (size_t k = 0; k < contrasts.size(); ++k) {
    const GlmContrast& con = contrasts[k];
    const std::string base = c.out + "_contrast-" + file_safe(con.name);
    nlohmann::json entry{{"name", con.name}, {"estimable", bool(fit.model.statistics[k].estimable)}};
    if (!fit.model.statistics[k].estimable) spdlog::warn("contrast {} is not estimable from this design", con.name);
    if (!con.is_f()) {
      write_nifti(outputs.add(base + "_stat-effect.nii.gz"), effect_map(fit.beta, con, grid));
      write_nifti(outputs.add(base + "_stat-t.nii.gz"), fit.statistics[k]);
      const auto [above, peak] = summarize(fit.statistics[k], c.threshold, true);
      fmt::print("  {} (t): max |t| {:.2f}, {} voxels with |t| > {}\n", con.name, peak, above, c.threshold);
      entry.update({{"type", "t"}, {"max_abs_t", peak}, {"voxels_above", above}});
    } else {
      write_nifti(outputs.add(base + "_stat-F.nii.gz"), fit.statistics[k]);
      const auto [above, peak] = summarize(fit.statistics[k], c.threshold * c.threshold, false);
      fmt::print("  {} (F): max F {:.2f}, {} voxels with F > {:.2f}\n", con.name, peak, above,
                 c.threshold * c.threshold);
      entry.update({{"type", "F"}, {"max_f", peak}});
    }
    entries.push_back(entry);
  }
  return entries;
}

FirstLevelPermutationOptions permutation_options(const GlmOptions& c, const ArGlmOptions& ar) {
  FirstLevelPermutationOptions po;
  po.ar = ar;
  po.fwhm_mm = c.fwhm;
  po.kind = c.permute_mode == "signflip" ? PermutationKind::kSignFlip : PermutationKind::kPermute;
  po.permutations = c.permutations;
  po.seed = c.seed;
  const auto wants = [&](const char* name) {
    return std::find(c.inference.begin(), c.inference.end(), name) != c.inference.end();
  };
  po.cluster_extent = wants("cluster-extent");
  po.cluster_mass = wants("cluster-mass");
  po.tfce = wants("tfce");
  po.cluster_threshold = c.cluster_threshold;
  po.connectivity = c.connectivity;
  po.tfce_E = c.tfce_e;
  po.tfce_H = c.tfce_h;
  po.max_batch = c.batch;
  return po;
}

// The permutation test's maps and null distributions; each contrast's "permutation" entry into `summary`.
void write_permutations(const GlmOptions& c, io::OutputSet& outputs, const FirstLevelPermutationResult& r,
                        const std::vector<GlmContrast>& contrasts, const ImageHeader& grid, nlohmann::json& summary) {
  const std::vector<int64_t> voxels(r.voxels.begin(), r.voxels.end());
  for (size_t k = 0; k < contrasts.size(); ++k) {
    const FirstLevelContrastResult& cr = r.contrasts[k];
    const std::string base = c.out + "_contrast-" + file_safe(contrasts[k].name);
    write_voxel_values(outputs.add(base + "_vox_corrp.nii.gz"), grid, voxels, cr.vox_corrp);
    write_null_distribution(outputs.add(base + "_null_vox.txt"), cr.max_null);
    size_t significant = 0;
    for (double x : cr.vox_corrp) significant += x >= 0.95 ? 1 : 0;
    nlohmann::json inference{{"permutations", r.count},
                             {"exhaustive", r.exhaustive},
                             {"mode", c.permute_mode},
                             {"seed", c.seed},
                             {"fwe_voxels", significant}};
    if (!cr.clustere_corrp.empty()) {
      write_voxel_values(outputs.add(base + "_clustere_corrp.nii.gz"), grid, voxels, cr.clustere_corrp);
      write_null_distribution(outputs.add(base + "_null_clustere.txt"), cr.max_extent);
    }
    if (!cr.clusterm_corrp.empty()) {
      write_voxel_values(outputs.add(base + "_clusterm_corrp.nii.gz"), grid, voxels, cr.clusterm_corrp);
      write_null_distribution(outputs.add(base + "_null_clusterm.txt"), cr.max_mass);
    }
    if (!cr.max_extent.empty()) {
      inference["cluster_threshold"] = c.cluster_threshold;
      inference["clusters"] = cr.clusters;
    }
    if (!cr.tfce.empty()) {
      write_voxel_values(outputs.add(base + "_tfce.nii.gz"), grid, voxels,
                         std::vector<double>(cr.tfce.begin(), cr.tfce.end()));
      write_voxel_values(outputs.add(base + "_tfce_corrp.nii.gz"), grid, voxels, cr.tfce_corrp);
      write_null_distribution(outputs.add(base + "_null_tfce.txt"), cr.max_tfce);
      inference["tfce_dh"] = cr.dh;
    }
    fmt::print("  {}: {} voxel(s) at FWE p <= 0.05 of {} permutations\n", contrasts[k].name, significant, r.count);
    summary["contrasts"][k]["permutation"] = inference;
  }
}

}  // namespace

void run_ar_glm(const GlmOptions& c, Device& device, const Image& bold, const DesignMatrix& design, double tr_s,
                const std::vector<GlmContrast>& contrasts, const std::vector<uint8_t>& mask, const Stopwatch& clock) {
  const ArGlmOptions ar{.order = c.ar_order(), .iterations = c.ar_iterations, .ar_fwhm_mm = c.ar_fwhm};
  const ArGlmImages fit = fit_ar_glm_series(device, bold, design.x, contrasts, mask, ar, c.fwhm);
  io::OutputSet outputs;  // every file under its final name only when all are written
  write_design(outputs.add(c.out + "_design.tsv"), design);
  write_nifti(outputs.add(c.out + "_beta.nii.gz"), fit.beta);
  write_nifti(outputs.add(c.out + "_sigma2.nii.gz"), fit.sigma2);
  write_nifti(outputs.add(c.out + "_ar.nii.gz"), fit.rho);
  write_nifti(outputs.add(c.out + "_mask.nii.gz"), mask_image(bold.header(), mask));
  fmt::print(
      "glm: {} volumes, {} columns (rank {}), AR({}) noise, {} Cochrane-Orcutt fit(s), AR maps smoothed {} mm, "
      "data smoothed {} mm, {} residual dof\n",
      bold.nt(), design.x.cols(), fit.model.rank, ar.order, ar.iterations, ar.ar_fwhm_mm, c.fwhm, fit.model.dof);
  nlohmann::json summary{{"bold", c.bold},
                         {"events", c.events},
                         {"tr_s", tr_s},
                         {"columns", design.names()},
                         {"rank", fit.model.rank},
                         {"dof", fit.model.dof},
                         {"noise", c.noise},
                         {"ar_iterations", ar.iterations},
                         {"ar_fwhm_mm", ar.ar_fwhm_mm},
                         {"fwhm_mm", c.fwhm},
                         {"contrasts", write_contrasts(c, outputs, fit, contrasts, bold.header())}};
  if (c.permutations > 0) {
    const Stopwatch perm_clock;
    ProgressLog log("permutations");
    const FirstLevelPermutationResult r =
        first_level_permutation_test(device, bold, design.x, contrasts, mask, permutation_options(c, ar),
                                     [&](int done, int total) { log(done, total); });
    write_permutations(c, outputs, r, contrasts, bold.header(), summary);
    summary["permutation_seconds"] = perm_clock.seconds();
  }
  summary["seconds"] = clock.seconds();
  write_text_atomically(outputs.add(c.out + "_glm.json"), summary.dump(2) + "\n");
  outputs.commit();
  fmt::print("wrote {}_design.tsv, _beta, _sigma2, _ar, _mask, _contrast-*.nii.gz, _glm.json ({:.2f} s)\n", c.out,
             clock.seconds());
}

}  // namespace rtf
