// `rtfmri normalize T1 --template colin27|mni152|PATH --out PREFIX`: affine then non-linear registration of a T1 to a
// template on the device; writes the ITK affine, the forward and inverse displacement fields, the T1 on the template's
// grid, optionally the warp's Jacobian determinant, and a JSON report.
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"
#include "cli/option_checks.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/data_lookup.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/registration/itk_transform.hpp"
#include "core/registration/normalization.hpp"
#include "core/registration/resample.hpp"

namespace {

struct NormalizeArgs {
  std::string t1, template_name = "colin27", out, affine_levels = "8:8,4:4,2:2",
                  warp_levels = rtf::format_nonlinear_levels(rtf::NonlinearOptions{}.levels), force = "lncc",
                  interp = "linear";
  bool affine_only = false, jacobian = false;
  rtf::NonlinearOptions warp;
};

nlohmann::json level_json(const rtf::NonlinearLevelReport& l) {
  return {{"spacing_mm", l.level.spacing_mm},
          {"dims", {l.dims[0], l.dims[1], l.dims[2]}},
          {"iterations", l.iterations},
          {"similarity_start", l.similarity_start},
          {"similarity_end", l.similarity_end},
          {"max_velocity_voxels", l.max_velocity_voxels},
          {"seconds", l.seconds}};
}

void run(const NormalizeArgs& args, const rtf::cli::GlobalOptions& globals) {
  rtf::cli::Stopwatch clock;
  const std::filesystem::path template_path = rtf::resolve_template(args.template_name, rtf::executable_dir());
  const rtf::Image t1 = rtf::read_nifti(args.t1);
  const rtf::Image templ = rtf::read_nifti(template_path);
  rtf::NormalizationOptions options;
  options.affine.levels = rtf::parse_linear_levels(args.affine_levels);
  options.nonlinear = !args.affine_only;
  options.jacobian_image = args.jacobian;
  options.warp = args.warp;
  options.warp.levels = rtf::parse_nonlinear_levels(args.warp_levels);
  options.warp.force = args.force == "demons" ? rtf::NonlinearForce::kDemons : rtf::NonlinearForce::kLncc;
  auto device = rtf::cli::open_device(globals);
  spdlog::info("normalising {} to {} ({}x{}x{})", args.t1, template_path.string(), templ.nx(), templ.ny(), templ.nz());

  // Progress: a line per level with the time left, estimated from the work so far (levels cost about in proportion
  // to their voxels times iterations).
  const auto affine_levels = static_cast<int>(options.affine.levels.size());
  const auto warp_levels = options.nonlinear ? static_cast<int>(options.warp.levels.size()) : 0;
  rtf::NormalizationProgress progress;
  progress.affine = [&](const rtf::LinearLevelReport& r, int level) {
    if (!r.finished) return;
    spdlog::info("affine level {}/{} (spacing {} mm): NCC {:.4f} after {} iterations, {:.2f} s", level + 1,
                 affine_levels, r.level.spacing_mm, r.ncc, r.iterations, r.seconds);
  };
  // The time left: seconds per voxel-iteration so far times the voxel-iterations of the levels to come (at most).
  std::vector<double> level_work;
  const double smallest = *std::min_element(templ.header().voxel_mm.begin(), templ.header().voxel_mm.end());
  for (const rtf::NonlinearLevel& l : options.warp.levels) {
    const int factor = std::max(1, static_cast<int>(std::lround(l.spacing_mm / smallest)));
    level_work.push_back(static_cast<double>(rtf::merged_grid(templ.header(), factor).voxels_per_volume()) *
                         std::max(l.iterations, 1));
  }
  double work_done = 0.0, work_seconds = 0.0;
  progress.nonlinear = [&](const rtf::NonlinearLevelReport& r, int level) {
    if (!r.finished) return;
    work_done += static_cast<double>(r.dims[0] * r.dims[1] * r.dims[2]) * std::max(r.iterations, 1);
    work_seconds += r.seconds;
    double left = 0.0;
    for (size_t l = static_cast<size_t>(level) + 1; l < level_work.size(); ++l) {
      left += work_seconds / work_done * level_work[l];
    }
    spdlog::info(
        "warp level {}/{} ({}x{}x{}, spacing {} mm): local correlation {:.4f} -> {:.4f} after {} "
        "iterations, largest velocity {:.2f} voxels, {:.2f} s{}",
        level + 1, warp_levels, r.dims[0], r.dims[1], r.dims[2], r.level.spacing_mm, r.similarity_start,
        r.similarity_end, r.iterations, r.max_velocity_voxels, r.seconds,
        level + 1 < warp_levels ? fmt::format("; about {:.0f} s left", left) : "");
  };
  const rtf::NormalizationResult result = rtf::normalize(*device, t1, templ, options, std::nullopt, progress);

  // The T1 on the template's grid, and the NCC in the template's brain (voxels > 0), affine only and in all.
  const auto interp = *rtf::parse_resample_interpolation(args.interp);
  const rtf::Image affine_only = rtf::resample(*device, t1, templ.header(), {result.affine}, interp);
  const rtf::Image warped =
      result.warp ? rtf::resample(*device, t1, templ.header(), result.template_to_subject(), interp) : affine_only;
  std::vector<float> brain(templ.data().size());
  for (size_t i = 0; i < brain.size(); ++i) brain[i] = templ.data()[i] > 0.0f ? 1.0f : 0.0f;
  const double ncc_affine = rtf::masked_ncc(affine_only.data(), templ.data(), brain);
  const double ncc = rtf::masked_ncc(warped.data(), templ.data(), brain);

  const std::string affine_path = args.out + "_affine.txt";
  const std::string warp_path = args.out + "_warp.nii.gz";
  const std::string inverse_path = args.out + "_inverse_warp.nii.gz";
  const std::string warped_path = args.out + "_warped.nii.gz";
  const std::string jacobian_path = args.out + "_jacobian.nii.gz";
  const std::string report_path = args.out + "_normalize.json";
  rtf::io::OutputSet outputs;  // every file under its final name only when all are written
  rtf::write_itk_affine(outputs.add(affine_path), result.affine);
  rtf::write_nifti(outputs.add(warped_path), warped);
  nlohmann::json report = {{"t1", args.t1},
                           {"template", template_path.string()},
                           {"device", device->info().device_name},
                           {"affine_transform", affine_path},
                           {"affine_ncc_levels", nlohmann::json::array()},
                           {"ncc_in_template_brain_affine", ncc_affine},
                           {"ncc_in_template_brain", ncc},
                           {"seconds_registration", result.seconds},
                           {"seconds", 0.0}};
  for (const auto& l : result.affine_report.levels) report["affine_ncc_levels"].push_back(l.ncc);
  if (result.warp) {
    rtf::write_displacement_field(outputs.add(warp_path), *result.warp);
    rtf::write_displacement_field(outputs.add(inverse_path), *result.inverse_warp);
    if (result.jacobian) rtf::write_nifti(outputs.add(jacobian_path), *result.jacobian);
    const rtf::JacobianSummary& j = result.jacobian_summary;
    report["warp"] = warp_path;
    report["inverse_warp"] = inverse_path;
    report["jacobian"] = {{"file", result.jacobian ? nlohmann::json(jacobian_path) : nlohmann::json(nullptr)},
                          {"min", j.min},
                          {"max", j.max},
                          {"folded_voxels", j.folded},
                          {"folded_voxels_in_brain", j.folded_in_mask}};
    report["inverse_error_mm"] = {{"max", result.inverse_error_max_mm}, {"mean", result.inverse_error_mean_mm}};
    report["force"] = args.force;
    report["warp_levels"] = nlohmann::json::array();
    for (const auto& l : result.nonlinear_report.levels) report["warp_levels"].push_back(level_json(l));
    report["apply_subject_to_template"] =
        fmt::format("rtfmri apply T1 -r {} -t {} -t {}", template_path.string(), warp_path, affine_path);
    report["apply_template_to_subject"] =
        fmt::format("rtfmri apply ATLAS -r {} -t [{},1] -t {} -n nearest", args.t1, affine_path, inverse_path);
    if (j.folded_in_mask > 0) {
      spdlog::warn("the warp folds {} voxels in the template's brain (Jacobian determinant <= 0)", j.folded_in_mask);
    }
    spdlog::info(
        "warp: Jacobian determinant {:.3f} .. {:.3f}, {} voxel(s) folded; inverse error in the brain: "
        "mean {:.3f} mm, max {:.3f} mm",
        j.min, j.max, j.folded, result.inverse_error_mean_mm, result.inverse_error_max_mm);
  }
  report["seconds"] = clock.seconds();
  rtf::write_text_atomically(outputs.add(report_path), report.dump(2) + "\n");
  outputs.commit();
  spdlog::info("NCC in the template's brain: affine {:.4f}, {} {:.4f}; wrote {}_* ({:.2f} s; registration {:.2f} s)",
               ncc_affine, result.warp ? "non-linear" : "affine", ncc, args.out, clock.seconds(), result.seconds);
  if (result.warp) {
    spdlog::info("T1 -> template: rtfmri apply IMAGE -r TEMPLATE -t {} -t {}", warp_path, affine_path);
    spdlog::info("template -> T1: rtfmri apply ATLAS -r T1 -t [{},1] -t {} -n nearest", affine_path, inverse_path);
  }
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<NormalizeArgs>();
  auto* cmd = app.add_subcommand(
      "normalize",
      "Normalise a T1 to a template on the device: 12-dof affine (NCC), then a diffeomorphic non-linear warp "
      "(log-domain demons with a local-correlation force). Writes PREFIX_affine.txt (ITK affine, template -> T1 "
      "points), PREFIX_warp.nii.gz and PREFIX_inverse_warp.nii.gz (ITK displacement fields on the finest level's grid: "
      "the template's grid at that level's spacing), PREFIX_warped.nii.gz (the T1 on the template's grid) and "
      "PREFIX_normalize.json. "
      "docs/algorithms/normalization.md");
  cmd->add_option("T1", args->t1, "The subject's T1 (3D NIfTI; brain-extracted for a brain template)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--template", args->template_name,
                  "colin27 (Colin27's brain, Debian's mricron-data; the default), colin27-head (with skull), mni152 "
                  "(FSL's MNI152_T1_1mm_brain from $FSLDIR) or a NIfTI path")
      ->capture_default_str();
  cmd->add_option("--out,-o", args->out, "Output prefix")->required();
  cmd->add_option("--affine-levels", args->affine_levels, "Affine coarse to fine: SPACING_MM:FWHM_MM per level")
      ->capture_default_str();
  cmd->add_option("--levels", args->warp_levels,
                  "Non-linear coarse to fine: SPACING_MM:ITERATIONS[:FWHM_MM] per level (the template's voxels are "
                  "merged to the spacing; FWHM: smoothing of both images, default the spacing on merged levels)")
      ->capture_default_str();
  cmd->add_option("--force", args->force,
                  "Non-linear similarity: lncc (local correlation: robust to intensity differences) or demons "
                  "(squared difference after a global intensity match)")
      ->capture_default_str()
      ->check(CLI::IsMember({"lncc", "demons"}));
  cmd->add_option("--window", args->warp.window_fwhm_voxels, "LNCC window FWHM, in level voxels")
      ->capture_default_str()
      ->check(rtf::cli::positive());
  cmd->add_option("--fluid", args->warp.fluid_fwhm_voxels, "Smoothing of each update (FWHM, level voxels)")
      ->capture_default_str()
      ->check(rtf::cli::non_negative());
  cmd->add_option("--diffusion", args->warp.diffusion_fwhm_voxels,
                  "Smoothing of the velocity field after each update (FWHM, level voxels)")
      ->capture_default_str()
      ->check(rtf::cli::non_negative());
  cmd->add_option("--step", args->warp.step_voxels, "Largest update per iteration, in level voxels")
      ->capture_default_str()
      ->check(rtf::cli::positive());
  cmd->add_flag("--affine-only", args->affine_only, "Stop after the affine (no warp files)");
  cmd->add_flag("--jacobian", args->jacobian,
                "Also write PREFIX_jacobian.nii.gz: the warp's Jacobian determinant on the template's grid (its range "
                "and folded voxels are always in the report)");
  cmd->add_option("--interp", args->interp, "Interpolation of PREFIX_warped.nii.gz: linear or cubic")
      ->capture_default_str()
      ->check(CLI::IsMember({"linear", "cubic"}));
  cmd->callback([args, &globals] { run(*args, globals); });
}

RTF_REGISTER_COMMAND(47, setup);

}  // namespace
