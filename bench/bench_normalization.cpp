// Normalisation benchmark (issue 14): a T1 -> template (affine + non-linear) on the device, or, with --synthetic, the
// template deformed by a known random diffeomorphism and affine (sim/warp_phantom.hpp) registered back. Prints one
// JSON line: the wall-clock median/p95 of the whole normalisation, the affine's and each warp level's median time
// (and its set-up share), the NCC in the template's brain after the affine and after the warp, the Jacobian and
// inverse checks, and for --synthetic the displacement error against the truth over the brain (median, mean, p95,
// max) and the mean Dice of atlas labels pulled onto the subject by the truth and by the estimate. The first run
// (kernel compilation) is not timed.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <Eigen/Geometry>
#include <Eigen/LU>
#include <algorithm>
#include <chrono>
#include <string>

#include "bench/bench_stats.hpp"
#include "bench/extra_data.hpp"
#include "core/device/device.hpp"
#include "core/io/nifti_io.hpp"
#include "core/reference/resample_reference.hpp"
#include "core/registration/itk_transform.hpp"
#include "core/registration/normalization.hpp"
#include "core/registration/resample.hpp"
#include "core/registration/transform_files.hpp"
#include "core/util/quantiles.hpp"
#include "sim/warp_phantom.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string device;
  std::string moving = rtf::bench::extra_data("anat/fcon1000_Beijing_sub00440_T1_brain.nii.gz");
  std::string fixed = rtf::bench::extra_data("templates/MNI152_T1_1mm_brain.nii.gz");
  std::string atlas, write_phantom;
  std::vector<std::string> compare_chain, compare_inverse;
  std::string affine_levels = "8:8,4:4,2:2";
  std::string levels = rtf::format_nonlinear_levels(rtf::NonlinearOptions{}.levels);
  std::string force = "lncc";
  bool synthetic = false;
  bool affine_only = false;
  double max_displacement_mm = 8.0;
  int runs = 3;
  rtf::NonlinearOptions warp;
};

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"rtfmri normalisation benchmark: T1 -> template, affine + non-linear, JSON lines"};
  app.add_option("--device", opt.device, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--moving", opt.moving, "Moving T1 (ignored with --synthetic)")->capture_default_str();
  app.add_option("--fixed", opt.fixed, "Template (brain-extracted)")->capture_default_str();
  app.add_option("--atlas", opt.atlas, "Label image in the template's space (Dice with --synthetic), e.g. AAL");
  app.add_option("--affine-levels", opt.affine_levels, "SPACING:FWHM per affine level")->capture_default_str();
  app.add_option("--levels", opt.levels, "SPACING:ITERATIONS[:FWHM] per warp level")->capture_default_str();
  app.add_option("--force", opt.force, "lncc or demons")->check(CLI::IsMember({"lncc", "demons"}));
  app.add_option("--window", opt.warp.window_fwhm_voxels, "LNCC window FWHM (level voxels)")->capture_default_str();
  app.add_option("--fluid", opt.warp.fluid_fwhm_voxels, "Update smoothing FWHM (level voxels)")->capture_default_str();
  app.add_option("--diffusion", opt.warp.diffusion_fwhm_voxels, "Velocity smoothing FWHM (level voxels)")
      ->capture_default_str();
  app.add_option("--step", opt.warp.step_voxels, "Largest update per iteration (level voxels)")->capture_default_str();
  app.add_option("--gain", opt.warp.gain, "Update = gain * smoothed force")->capture_default_str();
  app.add_option("--tolerance", opt.warp.convergence_tolerance, "Convergence: least gain over the window")
      ->capture_default_str();
  app.add_option("--runs", opt.runs, "Timed runs")->capture_default_str();
  app.add_flag("--affine-only", opt.affine_only, "No warp");
  app.add_flag("--synthetic", opt.synthetic,
               "Register the template deformed by a known random smooth diffeomorphism (up to --max-displacement mm) "
               "and a known affine, on an oblique grid, back to the template; report the error against the truth");
  app.add_option(
      "--write-phantom", opt.write_phantom,
      "Synthetic: write PREFIX_subject.nii.gz and the truth (PREFIX_truth_affine.txt, PREFIX_truth_warp.nii.gz: "
      "template -> subject points) for other tools");
  app.add_option("--compare-chain", opt.compare_chain,
                 "Synthetic: instead of registering, score this template -> subject chain (ITK affines and fields, "
                 "antsApplyTransforms order, [FILE,1] for an inverse) made by another tool from the written phantom")
      ->allow_extra_args(false);
  app.add_option("--compare-inverse", opt.compare_inverse,
                 "With --compare-chain: the other tool's subject -> template chain (for the atlas Dice)")
      ->allow_extra_args(false);
  app.add_option("--max-displacement", opt.max_displacement_mm, "Synthetic: largest displacement (mm)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto device_handle = rtf::Device::open(opt.device);
  rtf::Device& device = *device_handle;
  const rtf::Image fixed = rtf::read_nifti(opt.fixed);
  std::optional<rtf::sim::WarpPhantom> phantom;
  rtf::Image moving;
  if (opt.synthetic) {
    const rtf::sim::WarpPhantomSpec spec = rtf::sim::standard_warp_phantom(fixed.header(), opt.max_displacement_mm);
    phantom = rtf::sim::make_warp_phantom(device, fixed, spec);
    moving = phantom->subject;
    if (!opt.write_phantom.empty()) {
      rtf::write_nifti(opt.write_phantom + "_subject.nii.gz", moving);
      rtf::write_itk_affine(opt.write_phantom + "_truth_affine.txt", phantom->affine);
      rtf::write_displacement_field(opt.write_phantom + "_truth_warp.nii.gz", *phantom->warp);
    }
  } else {
    moving = rtf::read_nifti(opt.moving);
  }
  rtf::NormalizationOptions options;
  options.affine.levels = rtf::parse_linear_levels(opt.affine_levels);
  options.nonlinear = !opt.affine_only;
  options.warp = opt.warp;
  options.warp.levels = rtf::parse_nonlinear_levels(opt.levels);
  options.warp.force = opt.force == "demons" ? rtf::NonlinearForce::kDemons : rtf::NonlinearForce::kLncc;

  if (!opt.compare_chain.empty()) {
    if (!phantom) throw std::invalid_argument("--compare-chain needs --synthetic");
    std::vector<rtf::SpatialTransform> chain;
    for (const std::string& t : opt.compare_chain) chain.push_back(rtf::read_transform_spec(t));
    const rtf::Quantiles q =
        rtf::quantiles(rtf::sim::disagreement_in_brain(fixed, phantom->template_to_subject(), chain, 2));
    nlohmann::json line = {{"bench", "normalization-compare"},
                           {"chain", opt.compare_chain},
                           {"error_mm", {{"median", q.median}, {"p95", q.p95}, {"max", q.max}}}};
    if (!opt.atlas.empty() && !opt.compare_inverse.empty()) {
      std::vector<rtf::SpatialTransform> inverse;
      for (const std::string& t : opt.compare_inverse) inverse.push_back(rtf::read_transform_spec(t));
      const rtf::Image atlas = rtf::read_nifti(opt.atlas);
      const auto& sg = moving.header();
      const auto by_truth =
          rtf::resample(device, atlas, sg, phantom->subject_to_template(), rtf::ResampleInterpolation::kNearest);
      const auto by_other = rtf::resample(device, atlas, sg, inverse, rtf::ResampleInterpolation::kNearest);
      line["atlas_dice"] = {{"mean", rtf::sim::label_dice(by_truth, by_other).first}};
    }
    rtf::bench::print_line(line);
    return 0;
  }
  std::vector<double> total_ms, affine_ms, upload_ms, affine_all_ms, nonlinear_ms, final_ms, read_back_ms;
  std::vector<std::vector<double>> level_ms(options.warp.levels.size()), level_setup_ms(options.warp.levels.size());
  rtf::NormalizationResult last;
  double first_run_ms = 0.0;
  for (int run = 0; run <= opt.runs; ++run) {
    const auto t0 = Clock::now();
    last = rtf::normalize(device, moving, fixed, options);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (run == 0) {
      first_run_ms = ms;  // kernel compilation (or the program cache's loading) and first touches
      continue;
    }
    total_ms.push_back(ms);
    double affine = 0.0;
    for (const auto& l : last.affine_report.levels) affine += 1e3 * l.seconds;
    affine_ms.push_back(affine);
    affine_all_ms.push_back(1e3 * last.timing.affine);
    upload_ms.push_back(1e3 * last.timing.upload);
    nonlinear_ms.push_back(1e3 * last.timing.nonlinear);
    final_ms.push_back(1e3 * last.timing.final_fields);
    read_back_ms.push_back(1e3 * last.timing.read_back);
    for (size_t l = 0; l < last.nonlinear_report.levels.size(); ++l) {
      level_ms[l].push_back(1e3 * last.nonlinear_report.levels[l].seconds);
      level_setup_ms[l].push_back(1e3 * last.nonlinear_report.levels[l].setup_seconds);
    }
  }
  // Quality: NCC in the template's brain, affine only and in all.
  std::vector<float> brain(fixed.data().size());
  for (size_t i = 0; i < brain.size(); ++i) brain[i] = fixed.data()[i] > 0.0f ? 1.0f : 0.0f;
  const rtf::Image affine_only =
      rtf::resample(device, moving, fixed.header(), {last.affine}, rtf::ResampleInterpolation::kLinear);
  const rtf::Image warped =
      rtf::resample(device, moving, fixed.header(), last.template_to_subject(), rtf::ResampleInterpolation::kLinear);
  nlohmann::json levels = nlohmann::json::array();
  for (size_t l = 0; l < last.nonlinear_report.levels.size(); ++l) {
    const auto& r = last.nonlinear_report.levels[l];
    levels.push_back({{"spacing_mm", r.level.spacing_mm},
                      {"dims", {r.dims[0], r.dims[1], r.dims[2]}},
                      {"iterations", r.iterations},
                      {"similarity", {r.similarity_start, r.similarity_end}},
                      {"median_ms", rtf::bench::summarize(level_ms[l]).median},
                      {"setup_median_ms", rtf::bench::summarize(level_setup_ms[l]).median}});
  }
  const auto total = rtf::bench::summarize(total_ms);
  nlohmann::json line = {{"bench", "normalization"},
                         {"case", opt.synthetic ? "synthetic warp of " + opt.fixed : opt.moving + " -> " + opt.fixed},
                         {"device", device.info().device_name},
                         {"force", opt.force},
                         {"levels_spec", opt.levels},
                         {"window", opt.warp.window_fwhm_voxels},
                         {"fluid", opt.warp.fluid_fwhm_voxels},
                         {"diffusion", opt.warp.diffusion_fwhm_voxels},
                         {"step", opt.warp.step_voxels},
                         {"tolerance", opt.warp.convergence_tolerance},
                         {"gain", opt.warp.gain},
                         {"runs", total.runs},
                         {"median_ms", total.median},
                         {"p95_ms", total.p95},
                         {"first_run_ms", first_run_ms},
                         {"affine_median_ms", rtf::bench::summarize(affine_ms).median},
                         {"parts_median_ms",
                          {{"upload", rtf::bench::summarize(upload_ms).median},
                           {"affine_with_setup", rtf::bench::summarize(affine_all_ms).median},
                           {"nonlinear", rtf::bench::summarize(nonlinear_ms).median},
                           {"final_fields_and_checks", rtf::bench::summarize(final_ms).median},
                           {"read_back", rtf::bench::summarize(read_back_ms).median}}},
                         {"levels", levels},
                         {"ncc_brain_affine", rtf::masked_ncc(affine_only.data(), fixed.data(), brain)},
                         {"ncc_brain", rtf::masked_ncc(warped.data(), fixed.data(), brain)},
                         {"jacobian_min", last.jacobian_summary.min},
                         {"jacobian_max", last.jacobian_summary.max},
                         {"folded_in_brain", last.jacobian_summary.folded_in_mask},
                         {"inverse_error_mean_mm", last.inverse_error_mean_mm},
                         {"inverse_error_max_mm", last.inverse_error_max_mm}};
  if (phantom) {
    // Displacement error over the template's brain voxels (every second voxel per axis).
    const std::vector<double> errors =
        rtf::sim::disagreement_in_brain(fixed, phantom->template_to_subject(), last.template_to_subject(), 2);
    const rtf::Quantiles q = rtf::quantiles(errors);
    double mean = 0.0;
    for (double e : errors) mean += e / static_cast<double>(errors.size());
    line["error_mm"] = {{"median", q.median}, {"mean", mean}, {"p95", q.p95}, {"max", q.max}};
    if (!opt.atlas.empty()) {
      const rtf::Image atlas = rtf::read_nifti(opt.atlas);
      const rtf::ImageHeader& sg = phantom->subject.header();
      const auto by_truth =
          rtf::resample(device, atlas, sg, phantom->subject_to_template(), rtf::ResampleInterpolation::kNearest);
      const auto by_estimate =
          rtf::resample(device, atlas, sg, last.subject_to_template(), rtf::ResampleInterpolation::kNearest);
      const auto [dice, smallest] = rtf::sim::label_dice(by_truth, by_estimate);
      line["atlas_dice"] = {{"mean", dice}, {"min", smallest}};
    }
  }
  rtf::bench::print_line(line);
  return 0;
}
