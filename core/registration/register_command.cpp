// `rtfmri register`'s work (core/registration/register_command.hpp).
#include "core/registration/register_command.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <stdexcept>

#include "core/image/same_grid.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/registration/itk_transform.hpp"
#include "core/registration/resample.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {
namespace {

std::vector<uint8_t> read_mask(const std::string& path, const ImageHeader& grid, const std::string& grid_name) {
  const Image mask = read_nifti(path);
  require_same_grid(grid, grid_name, mask.header(), path);
  std::vector<uint8_t> out(static_cast<size_t>(grid.voxels_per_volume()));
  const auto v = mask.volume(0);
  for (size_t i = 0; i < out.size(); ++i) out[i] = v[i] != 0.0f ? 1 : 0;
  return out;
}

LinearRegistrationOptions registration_options(const RegisterCommandOptions& args) {
  LinearRegistrationOptions options;
  options.dof = args.dof;
  options.levels = parse_linear_levels(args.levels);
  options.max_iterations = args.max_iterations;
  options.lncc_window_voxels = args.lncc_window;
  options.cost = args.cost == "mi" ? LinearCost::kMi : args.cost == "lncc" ? LinearCost::kLncc : LinearCost::kNcc;
  return options;
}

// The cost's name, and its value in a level's report or before and after the whole registration.
struct CostValue {
  explicit CostValue(LinearCost cost) : mi(cost == LinearCost::kMi), lncc(cost == LinearCost::kLncc) {}
  const char* name() const { return mi ? "MI" : lncc ? "LNCC" : "NCC"; }
  double of(const LinearLevelReport& r) const { return mi ? r.mi : lncc ? r.lncc : r.ncc; }
  double before(const LinearRegistrationResult& r) const {
    return mi ? r.initial_mi : lncc ? r.initial_lncc : r.initial_ncc;
  }
  double after(const LinearRegistrationResult& r) const { return mi ? r.mi : lncc ? r.lncc : r.ncc; }
  bool mi, lncc;
};

nlohmann::json report_json(const RegisterCommandOptions& args, const LinearRegistrationResult& result,
                           const std::string& device, double seconds) {
  nlohmann::json report = {{"moving", args.moving},
                           {"fixed", args.fixed},
                           {"fixed_mask", args.fixed_mask},
                           {"dof", args.dof},
                           {"cost", args.cost},
                           {"init", args.init},
                           {"device", device},
                           {"initial_ncc", result.initial_ncc},
                           {"ncc", result.ncc},
                           {"initial_mi", result.initial_mi},
                           {"mi", result.mi},
                           {"initial_lncc", result.initial_lncc},
                           {"lncc", result.lncc},
                           {"iterations", result.iterations},
                           {"converged", result.converged},
                           {"seconds", seconds},
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
  return report;
}

}  // namespace

void run_register_command(const RegisterCommandOptions& args, const DeviceOpener& open_device) {
  Stopwatch clock;
  const Image moving = read_nifti(args.moving);
  const Image fixed = read_nifti(args.fixed);
  const LinearRegistrationOptions options = registration_options(args);
  std::vector<uint8_t> mask;
  if (!args.fixed_mask.empty()) mask = read_mask(args.fixed_mask, fixed.header(), args.fixed);
  Eigen::Matrix4d initial = Eigen::Matrix4d::Identity();
  if (args.init == "com") {
    initial = centre_of_mass_alignment(fixed, moving);
  } else if (args.init != "identity") {
    initial = read_itk_affine(args.init);
  }
  auto device = open_device();
  std::optional<std::span<const uint8_t>> mask_span;
  if (!mask.empty()) mask_span = std::span<const uint8_t>(mask);
  LinearRegistration registration(*device, fixed, moving, options, mask_span);
  // Progress: one line per level, with the time left estimated from the levels so far (the coarse levels cost about
  // as much as the fine ones: smoothing the full images dominates them).
  const int levels = static_cast<int>(options.levels.size());
  double done_seconds = 0.0;
  const CostValue cost(options.cost);
  const auto progress = [&](const LinearLevelReport& report, int level) {
    if (!report.finished) return;
    done_seconds += report.seconds;
    const double left = done_seconds / (level + 1) * (levels - level - 1);
    spdlog::info(
        "level {}/{} (spacing {} mm, FWHM {} mm, stride {}): {} {:.4f} after {} iterations, {} points, "
        "{:.2f} s{}",
        level + 1, levels, report.level.spacing_mm, report.level.fwhm_mm, report.stride, cost.name(), cost.of(report),
        report.iterations, report.points, report.seconds,
        level + 1 < levels ? fmt::format("; about {:.0f} s left", left) : "");
  };
  const LinearRegistrationResult result = registration.run(initial, progress);
  if (!result.failure.empty()) throw std::runtime_error("registration failed: " + result.failure);
  const auto interp = parse_resample_interpolation(args.interp);
  const Image warped = resample(*device, moving, fixed.header(), {result.transform}, *interp);
  const std::string affine_path = args.out + "_affine.txt";
  const std::string warped_path = args.out + "_warped.nii.gz";
  const std::string report_path = args.out + "_register.json";
  io::OutputSet outputs;  // every file under its final name only when all are written
  write_itk_affine(outputs.add(affine_path), result.transform);
  write_nifti(outputs.add(warped_path), warped);
  const nlohmann::json report = report_json(args, result, device->info().device_name, clock.seconds());
  write_text_atomically(outputs.add(report_path), report.dump(2) + "\n");
  outputs.commit();
  if (!result.converged) spdlog::warn("the finest level stopped at --max-iterations before converging");
  spdlog::info("registered {} to {} ({} dof): {} {:.4f} -> {:.4f}; wrote {}, {}, {} ({:.2f} s)", args.moving,
               args.fixed, args.dof, cost.name(), cost.before(result), cost.after(result), affine_path, warped_path,
               report_path, clock.seconds());
}

}  // namespace rtf
