// `rtfmri register MOVING FIXED --out PREFIX`: linear registration on the device (6, 9 or 12 degrees of freedom, NCC,
// MI or LNCC, coarse to fine); writes the ITK affine, the moving image resampled onto the fixed grid and a JSON report.
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"
#include "cli/option_checks.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/registration/itk_transform.hpp"
#include "core/registration/linear_registration.hpp"
#include "core/registration/resample.hpp"

namespace {

struct RegisterArgs {
  std::string moving, fixed, fixed_mask, out, init = "com", levels = "8:8,4:4,2:2", cost = "ncc", interp = "linear";
  int dof = 12;
  int max_iterations = 40;
  double lncc_window = rtf::LinearRegistrationOptions{}.lncc_window_voxels;
};

std::vector<uint8_t> read_mask(const std::string& path, const rtf::ImageHeader& grid, const std::string& grid_name) {
  const rtf::Image mask = rtf::read_nifti(path);
  rtf::cli::require_same_grid(grid, grid_name, mask.header(), path);
  std::vector<uint8_t> out(static_cast<size_t>(grid.voxels_per_volume()));
  const auto v = mask.volume(0);
  for (size_t i = 0; i < out.size(); ++i) out[i] = v[i] != 0.0f ? 1 : 0;
  return out;
}

void run(const RegisterArgs& args, const rtf::cli::GlobalOptions& globals) {
  rtf::cli::Stopwatch clock;
  const rtf::Image moving = rtf::read_nifti(args.moving);
  const rtf::Image fixed = rtf::read_nifti(args.fixed);
  rtf::LinearRegistrationOptions options;
  options.dof = args.dof;
  options.levels = rtf::parse_linear_levels(args.levels);
  options.max_iterations = args.max_iterations;
  options.lncc_window_voxels = args.lncc_window;
  options.cost = args.cost == "mi"     ? rtf::LinearCost::kMi
                 : args.cost == "lncc" ? rtf::LinearCost::kLncc
                                       : rtf::LinearCost::kNcc;
  std::vector<uint8_t> mask;
  if (!args.fixed_mask.empty()) mask = read_mask(args.fixed_mask, fixed.header(), args.fixed);
  Eigen::Matrix4d initial = Eigen::Matrix4d::Identity();
  if (args.init == "com") {
    initial = rtf::centre_of_mass_alignment(fixed, moving);
  } else if (args.init != "identity") {
    initial = rtf::read_itk_affine(args.init);
  }
  auto device = rtf::cli::open_device(globals);
  std::optional<std::span<const uint8_t>> mask_span;
  if (!mask.empty()) mask_span = std::span<const uint8_t>(mask);
  rtf::LinearRegistration registration(*device, fixed, moving, options, mask_span);
  // Progress: one line per level, with the time left estimated from the levels so far (the coarse levels cost about
  // as much as the fine ones: smoothing the full images dominates them).
  const int levels = static_cast<int>(options.levels.size());
  double done_seconds = 0.0;
  const bool mi = options.cost == rtf::LinearCost::kMi, lncc = options.cost == rtf::LinearCost::kLncc;
  const char* cost_name = mi ? "MI" : lncc ? "LNCC" : "NCC";
  const auto value = [&](const rtf::LinearLevelReport& r) { return mi ? r.mi : lncc ? r.lncc : r.ncc; };
  const auto progress = [&](const rtf::LinearLevelReport& report, int level) {
    if (!report.finished) return;
    done_seconds += report.seconds;
    const double left = done_seconds / (level + 1) * (levels - level - 1);
    spdlog::info(
        "level {}/{} (spacing {} mm, FWHM {} mm, stride {}): {} {:.4f} after {} iterations, {} points, "
        "{:.2f} s{}",
        level + 1, levels, report.level.spacing_mm, report.level.fwhm_mm, report.stride, cost_name, value(report),
        report.iterations, report.points, report.seconds,
        level + 1 < levels ? fmt::format("; about {:.0f} s left", left) : "");
  };
  const rtf::LinearRegistrationResult result = registration.run(initial, progress);
  if (!result.failure.empty()) throw std::runtime_error("registration failed: " + result.failure);
  const auto interp = rtf::parse_resample_interpolation(args.interp);
  const rtf::Image warped = rtf::resample(*device, moving, fixed.header(), {result.transform}, *interp);
  const std::string affine_path = args.out + "_affine.txt";
  const std::string warped_path = args.out + "_warped.nii.gz";
  const std::string report_path = args.out + "_register.json";
  rtf::io::OutputSet outputs;  // every file under its final name only when all are written
  rtf::write_itk_affine(outputs.add(affine_path), result.transform);
  rtf::write_nifti(outputs.add(warped_path), warped);
  nlohmann::json report = {{"moving", args.moving},
                           {"fixed", args.fixed},
                           {"fixed_mask", args.fixed_mask},
                           {"dof", args.dof},
                           {"cost", args.cost},
                           {"init", args.init},
                           {"device", device->info().device_name},
                           {"initial_ncc", result.initial_ncc},
                           {"ncc", result.ncc},
                           {"initial_mi", result.initial_mi},
                           {"mi", result.mi},
                           {"initial_lncc", result.initial_lncc},
                           {"lncc", result.lncc},
                           {"iterations", result.iterations},
                           {"converged", result.converged},
                           {"seconds", clock.seconds()},
                           {"transform_ras", nlohmann::json::array()},
                           {"levels", nlohmann::json::array()}};
  for (int r = 0; r < 4; ++r) {
    report["transform_ras"].push_back(
        {result.transform(r, 0), result.transform(r, 1), result.transform(r, 2), result.transform(r, 3)});
  }
  for (const auto& level : result.levels) {
    report["levels"].push_back({{"spacing_mm", level.level.spacing_mm},
                                {"fwhm_mm", level.level.fwhm_mm},
                                {"stride", level.stride},
                                {"points", level.points},
                                {"iterations", level.iterations},
                                {"ncc", level.ncc},
                                {"mi", level.mi},
                                {"lncc", level.lncc},
                                {"seconds", level.seconds}});
  }
  rtf::write_text_atomically(outputs.add(report_path), report.dump(2) + "\n");
  outputs.commit();
  if (!result.converged) spdlog::warn("the finest level stopped at --max-iterations before converging");
  spdlog::info("registered {} to {} ({} dof): {} {:.4f} -> {:.4f}; wrote {}, {}, {} ({:.2f} s)", args.moving,
               args.fixed, args.dof, cost_name,
               mi     ? result.initial_mi
               : lncc ? result.initial_lncc
                      : result.initial_ncc,
               mi     ? result.mi
               : lncc ? result.lncc
                      : result.ncc,
               affine_path, warped_path, report_path, clock.seconds());
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<RegisterArgs>();
  auto* cmd = app.add_subcommand(
      "register",
      "Linear registration of MOVING to FIXED on the device (any grids and orientations); writes PREFIX_affine.txt "
      "(ITK affine, fixed -> moving points, LPS), PREFIX_warped.nii.gz (MOVING on FIXED's grid) and "
      "PREFIX_register.json");
  cmd->add_option("MOVING", args->moving, "Image to move (3D NIfTI)")->required()->check(CLI::ExistingFile);
  cmd->add_option("FIXED", args->fixed, "Reference image (3D NIfTI): its grid is the output's")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", args->out, "Output prefix")->required();
  cmd->add_option("--dof", args->dof, "Degrees of freedom: 6 rigid, 9 rigid + scales, 12 affine")
      ->capture_default_str()
      ->check(CLI::IsMember({6, 9, 12}));
  cmd->add_option("--cost", args->cost,
                  "Cost: ncc (normalised cross-correlation: images of the same modality, e.g. T1 to a T1 template) or "
                  "mi (Mattes mutual information, 32 bins: different contrasts, e.g. EPI to T1) or lncc (local "
                  "correlation in Gaussian windows of --lncc-window sample steps: contrasts related linearly within a "
                  "window, of either sign; robust to a bias field). docs/algorithms/registration.md, \"Which cost\"")
      ->capture_default_str()
      ->check(CLI::IsMember({"ncc", "mi", "lncc"}));
  cmd->add_option("--lncc-window", args->lncc_window, "With --cost lncc: the window's FWHM in sample steps")
      ->capture_default_str()
      ->check(rtf::cli::positive());
  cmd->add_option("--fixed-mask", args->fixed_mask, "Mask on FIXED's grid: only its voxels drive the fit")
      ->check(CLI::ExistingFile);
  cmd->add_option("--init", args->init,
                  "Start: com (align the intensity centres of mass), identity, or an ITK affine file")
      ->capture_default_str();
  cmd->add_option("--levels", args->levels,
                  "Coarse to fine: SPACING_MM:FWHM_MM per level (sample spacing on FIXED, smoothing of both images)")
      ->capture_default_str();
  cmd->add_option("--max-iterations", args->max_iterations,
                  "Accepted steps per level (Levenberg-Marquardt for ncc, BFGS for mi and lncc)")
      ->capture_default_str()
      ->check(rtf::cli::positive());
  cmd->add_option("--interp", args->interp, "Interpolation of PREFIX_warped.nii.gz: linear, cubic or nearest")
      ->capture_default_str()
      ->check(CLI::IsMember({"linear", "cubic", "nearest"}));
  cmd->callback([args, &globals] { run(*args, globals); });
}

RTF_REGISTER_COMMAND(45, setup);

}  // namespace
