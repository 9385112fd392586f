// `rtfmri normalize`'s work (core/registration/normalize_command.hpp).
#include "core/registration/normalize_command.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/io/atomic_file.hpp"
#include "core/io/data_lookup.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/registration/itk_transform.hpp"
#include "core/registration/resample.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {
namespace {

NormalizationOptions normalization_options(const NormalizeCommandOptions& args) {
  NormalizationOptions options;
  options.affine.levels = parse_linear_levels(args.affine_levels);
  options.nonlinear = !args.affine_only;
  options.jacobian_image = args.jacobian;
  options.warp = args.warp;
  options.warp.levels = parse_nonlinear_levels(args.warp_levels);
  options.warp.force = args.force == "demons" ? NonlinearForce::kDemons : NonlinearForce::kLncc;
  return options;
}

// Progress: a line per level with the time left, estimated from the work so far (levels cost about in proportion to
// their voxels times iterations). Holds the work done so far; the callbacks refer to it.
class LevelProgress {
 public:
  LevelProgress(const NormalizationOptions& options, const ImageHeader& templ)
      : affine_levels_(static_cast<int>(options.affine.levels.size())),
        warp_levels_(options.nonlinear ? static_cast<int>(options.warp.levels.size()) : 0) {
    // The time left: seconds per voxel-iteration so far times the voxel-iterations of the levels to come (at most).
    const double smallest = *std::min_element(templ.voxel_mm.begin(), templ.voxel_mm.end());
    for (const NonlinearLevel& l : options.warp.levels) {
      const int factor = std::max(1, static_cast<int>(std::lround(l.spacing_mm / smallest)));
      level_work_.push_back(static_cast<double>(merged_grid(templ, factor).voxels_per_volume()) *
                            std::max(l.iterations, 1));
    }
  }

  NormalizationProgress callbacks() {
    NormalizationProgress progress;
    progress.affine = [this](const LinearLevelReport& r, int level) { affine(r, level); };
    progress.nonlinear = [this](const NonlinearLevelReport& r, int level) { nonlinear(r, level); };
    return progress;
  }

 private:
  void affine(const LinearLevelReport& r, int level) const {
    if (!r.finished) return;
    spdlog::info("affine level {}/{} (spacing {} mm): NCC {:.4f} after {} iterations, {:.2f} s", level + 1,
                 affine_levels_, r.level.spacing_mm, r.ncc, r.iterations, r.seconds);
  }

  void nonlinear(const NonlinearLevelReport& r, int level) {
    if (!r.finished) return;
    work_done_ += static_cast<double>(r.dims[0] * r.dims[1] * r.dims[2]) * std::max(r.iterations, 1);
    work_seconds_ += r.seconds;
    double left = 0.0;
    for (size_t l = static_cast<size_t>(level) + 1; l < level_work_.size(); ++l) {
      left += work_seconds_ / work_done_ * level_work_[l];
    }
    spdlog::info(
        "warp level {}/{} ({}x{}x{}, spacing {} mm): local correlation {:.4f} -> {:.4f} after {} "
        "iterations, largest velocity {:.2f} voxels, {:.2f} s{}",
        level + 1, warp_levels_, r.dims[0], r.dims[1], r.dims[2], r.level.spacing_mm, r.similarity_start,
        r.similarity_end, r.iterations, r.max_velocity_voxels, r.seconds,
        level + 1 < warp_levels_ ? fmt::format("; about {:.0f} s left", left) : "");
  }

  int affine_levels_, warp_levels_;
  std::vector<double> level_work_;
  double work_done_ = 0.0, work_seconds_ = 0.0;
};

nlohmann::json level_json(const NonlinearLevelReport& l) {
  return {{"spacing_mm", l.level.spacing_mm},
          {"dims", {l.dims[0], l.dims[1], l.dims[2]}},
          {"iterations", l.iterations},
          {"similarity_start", l.similarity_start},
          {"similarity_end", l.similarity_end},
          {"max_velocity_voxels", l.max_velocity_voxels},
          {"seconds", l.seconds}};
}

// The output files' names.
struct NormalizePaths {
  explicit NormalizePaths(const std::string& out)
      : affine(out + "_affine.txt"),
        warp(out + "_warp.nii.gz"),
        inverse(out + "_inverse_warp.nii.gz"),
        warped(out + "_warped.nii.gz"),
        jacobian(out + "_jacobian.nii.gz"),
        report(out + "_normalize.json") {}
  std::string affine, warp, inverse, warped, jacobian, report;
};

// The warp's files and their part of the report; logs the Jacobian's range and the inverse's error.
void add_warp(io::OutputSet& outputs, nlohmann::json& report, const NormalizationResult& result,
              const NormalizeCommandOptions& args, const NormalizePaths& paths, const std::string& template_path) {
  write_displacement_field(outputs.add(paths.warp), *result.warp);
  write_displacement_field(outputs.add(paths.inverse), *result.inverse_warp);
  if (result.jacobian) write_nifti(outputs.add(paths.jacobian), *result.jacobian);
  const JacobianSummary& j = result.jacobian_summary;
  report["warp"] = paths.warp;
  report["inverse_warp"] = paths.inverse;
  report["jacobian"] = {{"file", result.jacobian ? nlohmann::json(paths.jacobian) : nlohmann::json(nullptr)},
                        {"min", j.min},
                        {"max", j.max},
                        {"folded_voxels", j.folded},
                        {"folded_voxels_in_brain", j.folded_in_mask}};
  report["inverse_error_mm"] = {{"max", result.inverse_error_max_mm}, {"mean", result.inverse_error_mean_mm}};
  report["force"] = args.force;
  report["warp_levels"] = nlohmann::json::array();
  for (const auto& l : result.nonlinear_report.levels) report["warp_levels"].push_back(level_json(l));
  report["apply_subject_to_template"] =
      fmt::format("rtfmri apply T1 -r {} -t {} -t {}", template_path, paths.warp, paths.affine);
  report["apply_template_to_subject"] =
      fmt::format("rtfmri apply ATLAS -r {} -t [{},1] -t {} -n nearest", args.t1, paths.affine, paths.inverse);
  if (j.folded_in_mask > 0) {
    spdlog::warn("the warp folds {} voxels in the template's brain (Jacobian determinant <= 0)", j.folded_in_mask);
  }
  spdlog::info(
      "warp: Jacobian determinant {:.3f} .. {:.3f}, {} voxel(s) folded; inverse error in the brain: "
      "mean {:.3f} mm, max {:.3f} mm",
      j.min, j.max, j.folded, result.inverse_error_mean_mm, result.inverse_error_max_mm);
}

}  // namespace

void run_normalize_command(const NormalizeCommandOptions& args, const DeviceOpener& open_device) {
  Stopwatch clock;
  const std::filesystem::path template_path = resolve_template(args.template_name, executable_dir());
  const Image t1 = read_nifti(args.t1);
  const Image templ = read_nifti(template_path);
  const NormalizationOptions options = normalization_options(args);
  auto device = open_device();
  spdlog::info("normalising {} to {} ({}x{}x{})", args.t1, template_path.string(), templ.nx(), templ.ny(), templ.nz());
  LevelProgress progress(options, templ.header());
  const NormalizationResult result = normalize(*device, t1, templ, options, std::nullopt, progress.callbacks());

  // The T1 on the template's grid, and the NCC in the template's brain (voxels > 0), affine only and in all.
  const auto interp = *parse_resample_interpolation(args.interp);
  const Image affine_only = resample(*device, t1, templ.header(), {result.affine}, interp);
  const Image warped =
      result.warp ? resample(*device, t1, templ.header(), result.template_to_subject(), interp) : affine_only;
  std::vector<float> brain(templ.data().size());
  for (size_t i = 0; i < brain.size(); ++i) brain[i] = templ.data()[i] > 0.0f ? 1.0f : 0.0f;
  const double ncc_affine = masked_ncc(affine_only.data(), templ.data(), brain);
  const double ncc = masked_ncc(warped.data(), templ.data(), brain);

  const NormalizePaths paths(args.out);
  io::OutputSet outputs;  // every file under its final name only when all are written
  write_itk_affine(outputs.add(paths.affine), result.affine);
  write_nifti(outputs.add(paths.warped), warped);
  nlohmann::json report = {{"t1", args.t1},
                           {"template", template_path.string()},
                           {"device", device->info().device_name},
                           {"affine_transform", paths.affine},
                           {"affine_ncc_levels", nlohmann::json::array()},
                           {"ncc_in_template_brain_affine", ncc_affine},
                           {"ncc_in_template_brain", ncc},
                           {"seconds_registration", result.seconds},
                           {"seconds", 0.0}};
  for (const auto& l : result.affine_report.levels) report["affine_ncc_levels"].push_back(l.ncc);
  if (result.warp) add_warp(outputs, report, result, args, paths, template_path.string());
  report["seconds"] = clock.seconds();
  write_text_atomically(outputs.add(paths.report), report.dump(2) + "\n");
  outputs.commit();
  spdlog::info("NCC in the template's brain: affine {:.4f}, {} {:.4f}; wrote {}_* ({:.2f} s; registration {:.2f} s)",
               ncc_affine, result.warp ? "non-linear" : "affine", ncc, args.out, clock.seconds(), result.seconds);
  if (result.warp) {
    spdlog::info("T1 -> template: rtfmri apply IMAGE -r TEMPLATE -t {} -t {}", paths.warp, paths.affine);
    spdlog::info("template -> T1: rtfmri apply ATLAS -r T1 -t [{},1] -t {} -n nearest", paths.affine, paths.inverse);
  }
}

}  // namespace rtf
