// Normalisation: the affine, the non-linear refinement, and the final warp, inverse warp and Jacobian on the
// template's grid.
#include "core/registration/normalization.hpp"

#include <Eigen/LU>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "core/device/buffer.hpp"
#include "core/registration/deformation_ops.hpp"
#include "core/registration/displacement_field.hpp"
#include "core/registration/resample.hpp"

namespace rtf {

std::vector<SpatialTransform> NormalizationResult::template_to_subject() const {
  if (!warp) return {affine};
  return {warp, affine};
}

std::vector<SpatialTransform> NormalizationResult::subject_to_template() const {
  const Eigen::Matrix4d inverse = affine.inverse();
  if (!inverse_warp) return {inverse};
  return {inverse, inverse_warp};
}

NormalizationResult normalize(Device& device, const Image& subject, const Image& template_image,
                              const NormalizationOptions& options, const std::optional<Eigen::Matrix4d>& initial,
                              const NormalizationProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  auto lap = start;
  const auto seconds_of_lap = [&lap] {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - lap).count();
    lap = now;
    return s;
  };
  NormalizationResult result;
  // Both images go to the device once; the affine and the non-linear registrations and the final checks share them.
  if (subject.nt() != 1 || template_image.nt() != 1) {
    throw std::invalid_argument("normalisation: the subject and the template must be 3D images");
  }
  if (options.nonlinear) check_nonlinear_options(options.warp);
  const auto fixed = DeviceVolume::upload(device, template_image);
  const auto moving = DeviceVolume::upload(device, subject);
  result.timing.upload = seconds_of_lap();
  {
    LinearRegistration affine(device, fixed, moving, options.affine);
    const Eigen::Matrix4d init = initial ? *initial : centre_of_mass_alignment(*fixed, *moving);
    result.affine_report = affine.run(init, progress.affine);
  }
  if (!result.affine_report.failure.empty()) {
    throw std::runtime_error("normalisation: the affine registration failed: " + result.affine_report.failure);
  }
  result.affine = result.affine_report.transform;
  result.timing.affine = seconds_of_lap();
  if (options.nonlinear) {
    result.nonlinear_report =
        nonlinear_register(device, *fixed, *moving, result.affine, options.warp, progress.nonlinear);
    result.timing.nonlinear = seconds_of_lap();
    const NonlinearResult& nl = result.nonlinear_report;
    cl_command_queue q = device.queue();
    // exp(v) and exp(-v) on the finest level's grid, in world mm: the warp files live on that grid (the fields are
    // smooth on it; sampling them elsewhere is trilinear, as ITK's displacement-field transform does).
    const auto n = static_cast<size_t>(nl.grid.voxels_per_volume());
    DeformationOps level_ops(device, nl.grid.dims);
    DeviceBuffer<float> v(device, 3 * n), u(device, 3 * n), w(device, 3 * n), scratch(device, 3 * n);
    v.write(q, nl.velocity);
    const int squarings = std::max(options.final_squarings, DeformationOps::squarings_for(level_ops.max_norm(v)));
    level_ops.exponential(v, u, scratch, squarings);
    level_ops.transform_vectors(v, scratch, -Eigen::Matrix3d::Identity());
    level_ops.exponential(scratch, w, v, squarings);
    const Eigen::Matrix3d level_to_world = nl.grid.affine.topLeftCorner<3, 3>();
    level_ops.transform_vectors(u, u, level_to_world);
    level_ops.transform_vectors(w, w, level_to_world);

    // Checks on the template's grid, where the warp is used: det(I + Du) and inverse(warp(x)) - x over the template's
    // brain (voxels > 0), in its voxel units and then mm.
    const ImageHeader& tg = template_image.header();
    const auto tn = static_cast<size_t>(tg.voxels_per_volume());
    const Eigen::Matrix3d world_to_template = tg.affine.topLeftCorner<3, 3>().inverse();
    DeviceBuffer<float> tu(device, 3 * tn), tw(device, 3 * tn), residual(device, 3 * tn), det(device, tn);
    DeformationOps ops(device, tg.dims);
    for (auto [from, to] : {std::pair{&u, &tu}, std::pair{&w, &tw}}) {
      resample_on_device(device, *from, nl.grid.dims, *to, tg.dims, nl.grid.affine.inverse() * tg.affine, 3,
                         ResampleInterpolation::kLinear);
      ops.transform_vectors(*to, *to, world_to_template);
    }
    ops.jacobian(tu, det);
    ops.compose(tu, tw, residual, 1.0f);
    ops.transform_vectors(residual, residual, tg.affine.topLeftCorner<3, 3>());
    const WarpCheck check = ops.warp_check(det, residual, fixed->data);
    JacobianSummary& js = result.jacobian_summary;
    js.min = check.min_det;
    js.max = check.max_det;
    js.folded = check.folded;
    js.folded_in_mask = check.folded_in_mask;
    js.voxels = static_cast<int64_t>(tn);
    result.inverse_error_mean_mm = check.mean_residual;
    result.inverse_error_max_mm = check.max_residual;
    result.timing.final_fields = seconds_of_lap();

    result.warp = std::make_shared<const Image>(displacement_field_image(nl.grid, u.read_all(q)));
    result.inverse_warp = std::make_shared<const Image>(displacement_field_image(nl.grid, w.read_all(q)));
    if (options.jacobian_image) {
      ImageHeader jh = tg;
      jh.num_volumes = 1;
      jh.tr_s = 0.0;
      jh.source_type = DataType::kFloat32;
      jh.vector_components = false;
      result.jacobian = std::make_shared<const Image>(jh, det.read_all(q));
    }
    result.timing.read_back = seconds_of_lap();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

double masked_ncc(std::span<const float> a, std::span<const float> b, std::span<const float> mask) {
  double n = 0, sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (!mask.empty() && !(mask[i] != 0.0f)) continue;
    const double x = a[i], y = b[i];
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    n += 1;
    sa += x;
    sb += y;
    saa += x * x;
    sbb += y * y;
    sab += x * y;
  }
  if (n < 2) return 0.0;
  const double va = saa - sa * sa / n, vb = sbb - sb * sb / n;
  if (!(va > 0) || !(vb > 0)) return 0.0;
  return (sab - sa * sb / n) / std::sqrt(va * vb);
}

}  // namespace rtf
