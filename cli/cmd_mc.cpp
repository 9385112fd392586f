// `rtfmri mc IN.nii.gz --out PREFIX [--ref K|FILE]`: offline motion correction with the live stage's kernels.
// Writes PREFIX.nii.gz (corrected), PREFIX.par (FSL order), PREFIX.1D (AFNI order) and PREFIX_fd.tsv.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <stdexcept>

#include "cli/cli_support.hpp"
#include "cli/command_registry.hpp"
#include "cli/option_checks.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/mask/brain_mask.hpp"
#include "core/motion/motion_metrics.hpp"
#include "core/registration/rigid_registration.hpp"

namespace {

struct McOptions {
  std::string in;
  std::string out;
  std::string ref = "0";
  std::string interpolation = "cubic";
  bool no_intensity_model = false;
  double final_fwhm_mm = 6.0;
};

rtf::Image reference_volume(const McOptions& o, const rtf::Image& series) {
  if (!o.ref.empty() && o.ref.find_first_not_of("0123456789") == std::string::npos) {
    const int64_t k = std::stoll(o.ref);
    if (k >= series.nt()) {
      throw std::invalid_argument(fmt::format("--ref {}: the series has volumes 0..{}", k, series.nt() - 1));
    }
    return series.extract_volume(k);
  }
  rtf::Image ref = rtf::read_nifti(o.ref);
  if (ref.nt() != 1) throw std::invalid_argument(fmt::format("--ref {}: a 3D image is needed", o.ref));
  rtf::cli::require_same_grid(series.header(), o.in, ref.header(), o.ref);
  return ref;
}

void run(const McOptions& o, const rtf::cli::GlobalOptions& globals) {
  using namespace rtf;
  const cli::Stopwatch clock;
  Image series = read_nifti(o.in);
  const Image ref = reference_volume(o, series);
  auto device = cli::open_device(globals);
  RegistrationOptions options;
  options.intensity_model = !o.no_intensity_model;
  options.levels.back().smoothing_fwhm_mm = o.final_fwhm_mm;
  const Interpolation interp = o.interpolation == "linear" ? Interpolation::kTrilinear : Interpolation::kCubic;
  options.levels.back().interpolation = interp;
  RigidRegistration reg(*device, series.header(), options);
  reg.set_reference(ref.data());

  const BrainMask mask = compute_brain_mask(*device, ref);
  const auto n = static_cast<size_t>(series.header().voxels_per_volume());
  DeviceBuffer<float> volume(*device, n), corrected(*device, n);
  Image out(series.header());
  std::vector<VolumeMotion> motion;
  Eigen::Matrix4d estimate = Eigen::Matrix4d::Identity();
  int flagged = 0;
  for (int64_t t = 0; t < series.nt(); ++t) {
    volume.write(device->queue(), series.volume(t));
    RegistrationResult r = reg.register_volume(volume, 0, estimate);
    VolumeMotion m;
    m.converged = r.converged;
    m.iterations = r.iterations;
    m.rms_residual = r.rms_residual;
    m.failure = r.failure;
    if (r.converged) {
      estimate = r.transform;
    } else {
      ++flagged;
      spdlog::warn("volume {}: {}; flagged (the previous estimate is used for reslicing)", t, r.failure);
    }
    m.params = rigid_params(estimate, reg.centre(), 1e-5);
    reg.reslice(volume, 0, estimate, corrected, interp);
    corrected.read(device->queue(), out.volume(t));
    if (t > 0) {
      m.fd_mm = framewise_displacement(motion.back().params, m.params);
      m.dvars = dvars(out.volume(t - 1), out.volume(t), mask.inside);
    }
    motion.push_back(m);
  }
  io::OutputSet outputs;  // the four files under their final names only when all are written
  write_nifti(outputs.add(o.out + ".nii.gz"), out);
  write_fsl_par(outputs.add(o.out + ".par"), motion);
  write_afni_1d(outputs.add(o.out + ".1D"), motion);
  write_motion_tsv(outputs.add(o.out + "_fd.tsv"), motion);
  outputs.commit();
  double max_fd = 0.0;
  for (const auto& m : motion) max_fd = std::max(max_fd, m.fd_mm);
  fmt::print(
      "mc: {} volumes in {:.2f} s; max FD {:.3f} mm; {} flagged (not converged); wrote {}.nii.gz, .par, .1D, "
      "_fd.tsv\n",
      series.nt(), clock.seconds(), max_fd, flagged, o.out);
  (void)n;
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto o = std::make_shared<McOptions>();
  auto* cmd = app.add_subcommand("mc", "Rigid motion correction of a 4D NIfTI (docs/algorithms/motion_correction.md)");
  cmd->add_option("IN", o->in, "4D NIfTI")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", o->out, "Output prefix: PREFIX.nii.gz, PREFIX.par, PREFIX.1D, PREFIX_fd.tsv")->required();
  cmd->add_option("--ref", o->ref, "Reference: a volume index of IN, or a 3D NIfTI on the same grid")
      ->capture_default_str();
  cmd->add_option("--interpolation", o->interpolation, "Finest-level sampling and reslicing")
      ->check(CLI::IsMember({"cubic", "linear"}))
      ->capture_default_str();
  cmd->add_option("--fwhm", o->final_fwhm_mm, "Smoothing (mm) of both images at the finest level (0: none)")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_flag("--no-intensity-model", o->no_intensity_model,
                "Do not fit a linear intensity field alongside the motion (faster; less robust to shading)");
  cmd->callback([o, &globals] { run(*o, globals); });
}

RTF_REGISTER_COMMAND(65, setup);

}  // namespace
