// The series GLM's betas, residual variance, mask and per contrast the effect and t map (or the F map), with
// PREFIX_glm.json.
#include "core/first_level/glm_ols.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "core/first_level/glm_outputs.hpp"
#include "core/glm/series_glm.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"

namespace rtf {

namespace {

// Each contrast's maps; returns the contrasts' entries of the report.
nlohmann::json write_contrasts(const GlmOptions& c, io::OutputSet& outputs, const SeriesGlmResult& r,
                               const std::vector<GlmContrast>& contrasts) {
  nlohmann::json entries = nlohmann::json::array();
  size_t kt = 0, kf = 0;
  for (const GlmContrast& con : contrasts) {
    const std::string base = c.out + "_contrast-" + file_safe(con.name);
    nlohmann::json entry{{"name", con.name}};
    if (!con.is_f()) {
      if (!r.model.t_estimable[kt]) spdlog::warn("contrast {} is not estimable from this design", con.name);
      write_nifti(outputs.add(base + "_stat-effect.nii.gz"), r.contrast[kt]);
      write_nifti(outputs.add(base + "_stat-t.nii.gz"), r.t[kt]);
      const auto [above, peak] = summarize(r.t[kt], c.threshold, true);
      fmt::print("  {} (t): max |t| {:.2f}, {} voxels with |t| > {}\n", con.name, peak, above, c.threshold);
      entry.update(
          {{"type", "t"}, {"max_abs_t", peak}, {"voxels_above", above}, {"estimable", bool(r.model.t_estimable[kt])}});
      ++kt;
    } else {
      write_nifti(outputs.add(base + "_stat-F.nii.gz"), r.f[kf]);
      const auto [above, peak] = summarize(r.f[kf], c.threshold * c.threshold, false);
      fmt::print("  {} (F, {} and {} dof): max F {:.2f}, {} voxels with F > {:.2f}\n", con.name, r.model.f_dof[kf],
                 r.model.dof, peak, above, c.threshold * c.threshold);
      entry.update({{"type", "F"}, {"max_f", peak}, {"numerator_dof", r.model.f_dof[kf]}});
      ++kf;
    }
    entries.push_back(entry);
  }
  return entries;
}

}  // namespace

void run_ols_glm(const GlmOptions& c, Device& device, const Image& bold, const DesignMatrix& design, double tr_s,
                 const std::vector<GlmContrast>& contrasts, const std::optional<std::vector<uint8_t>>& mask,
                 const Stopwatch& clock) {
  const SeriesGlmResult r = fit_series_glm(device, bold, design, contrasts, c.ar1, mask);
  io::OutputSet outputs;  // every file under its final name only when all are written
  write_design(outputs.add(c.out + "_design.tsv"), design);
  write_nifti(outputs.add(c.out + "_beta.nii.gz"), r.beta);
  write_nifti(outputs.add(c.out + "_sigma2.nii.gz"), r.sigma2);
  if (mask) write_nifti(outputs.add(c.out + "_mask.nii.gz"), mask_image(bold.header(), *mask));
  fmt::print("glm: {} volumes, {} columns (rank {}), {} residual dof{}\n", bold.nt(), design.x.cols(), r.model.rank,
             r.model.dof, c.ar1 != 0.0 ? fmt::format(", AR(1) {}", c.ar1) : "");
  const nlohmann::json summary{{"bold", c.bold},       {"events", c.events},
                               {"tr_s", tr_s},         {"columns", design.names()},
                               {"rank", r.model.rank}, {"dof", r.model.dof},
                               {"ar1", c.ar1},         {"contrasts", write_contrasts(c, outputs, r, contrasts)}};
  write_text_atomically(outputs.add(c.out + "_glm.json"), summary.dump(2) + "\n");
  outputs.commit();
  fmt::print("wrote {}_design.tsv, _beta, _sigma2, _mask, _contrast-*_stat-*.nii.gz, _glm.json ({:.2f} s)\n", c.out,
             clock.seconds());
}

}  // namespace rtf
