// `rtfmri mc`'s work (core/motion/mc_command.hpp).
#include "core/motion/mc_command.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

#include "core/image/same_grid.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/mask/brain_mask.hpp"
#include "core/motion/motion_metrics.hpp"
#include "core/registration/rigid_registration.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {
namespace {

Image reference_volume(const McCommandOptions& o, const Image& series) {
  if (!o.ref.empty() && o.ref.find_first_not_of("0123456789") == std::string::npos) {
    const int64_t k = std::stoll(o.ref);
    if (k >= series.nt()) {
      throw std::invalid_argument(fmt::format("--ref {}: the series has volumes 0..{}", k, series.nt() - 1));
    }
    return series.extract_volume(k);
  }
  Image ref = read_nifti(o.ref);
  if (ref.nt() != 1) throw std::invalid_argument(fmt::format("--ref {}: a 3D image is needed", o.ref));
  require_same_grid(series.header(), o.in, ref.header(), o.ref);
  return ref;
}

// Every volume registered to the reference (starting from the previous volume's estimate) and resliced into `out`;
// a volume whose registration did not converge is flagged and resliced with the previous estimate.
std::vector<VolumeMotion> correct_series(Device& device, const McCommandOptions& o, const Image& series,
                                         const Image& ref, Image& out, int& flagged) {
  RegistrationOptions options;
  options.intensity_model = !o.no_intensity_model;
  options.levels.back().smoothing_fwhm_mm = o.final_fwhm_mm;
  const Interpolation interp = o.interpolation == "linear" ? Interpolation::kTrilinear : Interpolation::kCubic;
  options.levels.back().interpolation = interp;
  RigidRegistration reg(device, series.header(), options);
  reg.set_reference(ref.data());

  const BrainMask mask = compute_brain_mask(device, ref);
  const auto n = static_cast<size_t>(series.header().voxels_per_volume());
  DeviceBuffer<float> volume(device, n), corrected(device, n);
  std::vector<VolumeMotion> motion;
  Eigen::Matrix4d estimate = Eigen::Matrix4d::Identity();
  for (int64_t t = 0; t < series.nt(); ++t) {
    volume.write(device.queue(), series.volume(t));
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
    corrected.read(device.queue(), out.volume(t));
    if (t > 0) {
      m.fd_mm = framewise_displacement(motion.back().params, m.params);
      m.dvars = dvars(out.volume(t - 1), out.volume(t), mask.inside);
    }
    motion.push_back(m);
  }
  return motion;
}

}  // namespace

void run_mc_command(const McCommandOptions& o, const DeviceOpener& open_device) {
  const Stopwatch clock;
  Image series = read_nifti(o.in);
  const Image ref = reference_volume(o, series);
  auto device = open_device();
  Image out(series.header());
  int flagged = 0;
  const std::vector<VolumeMotion> motion = correct_series(*device, o, series, ref, out, flagged);
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
}

}  // namespace rtf
