// Normalisation: the affine, the non-linear refinement, and the final warp, inverse warp and Jacobian on the
// template's grid.
#include "core/registration/normalization.hpp"

#include <Eigen/LU>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "core/device/buffer.hpp"
#include "core/registration/deformation_ops.hpp"
#include "core/registration/resample.hpp"

namespace rtf {

namespace {

// A field (three volumes, `grid`'s voxel units) converted to world mm, on `grid`.
Image field_image(const ImageHeader& grid, std::vector<float> data) {
  ImageHeader h = grid;
  h.num_volumes = 3;
  h.tr_s = 0.0;
  h.source_type = DataType::kFloat32;
  h.vector_components = true;
  return Image(h, std::move(data));
}

// The world-mm field on `from` resampled (trilinear, 0 outside) onto `to`; the same grid is returned as is.
Image field_on_grid(Device& device, Image field, const ImageHeader& to) {
  if (field.header().same_grid(to)) return field;
  Image out = resample(device, field, to, {}, ResampleInterpolation::kLinear);
  out.header().vector_components = true;
  return out;
}

}  // namespace

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
  NormalizationResult result;
  {
    LinearRegistration affine(device, template_image, subject, options.affine);
    const Eigen::Matrix4d init = initial ? *initial : centre_of_mass_alignment(template_image, subject);
    result.affine_report = affine.run(init, progress.affine);
  }
  if (!result.affine_report.failure.empty()) {
    throw std::runtime_error("normalisation: the affine registration failed: " + result.affine_report.failure);
  }
  result.affine = result.affine_report.transform;
  if (options.nonlinear) {
    result.nonlinear_report =
        nonlinear_register(device, template_image, subject, result.affine, options.warp, progress.nonlinear);
    const NonlinearResult& nl = result.nonlinear_report;
    cl_command_queue q = device.queue();
    // exp(v) and exp(-v) on the finest level's grid, in world mm.
    const auto n = static_cast<size_t>(nl.grid.voxels_per_volume());
    DeformationOps level_ops(device, nl.grid.dims);
    DeviceBuffer<float> v(device, 3 * n), u(device, 3 * n), w(device, 3 * n), scratch(device, 3 * n);
    v.write(q, nl.velocity);
    const int squarings = std::max(options.final_squarings, DeformationOps::squarings_for(level_ops.max_norm(v)));
    level_ops.exponential(v, u, scratch, squarings);
    std::vector<float> negated(nl.velocity.size());
    for (size_t i = 0; i < negated.size(); ++i) negated[i] = -nl.velocity[i];
    v.write(q, negated);
    level_ops.exponential(v, w, scratch, squarings);
    const Eigen::Matrix3d to_world = nl.grid.affine.topLeftCorner<3, 3>();
    level_ops.transform_vectors(u, u, to_world);
    level_ops.transform_vectors(w, w, to_world);
    const ImageHeader& tg = template_image.header();
    Image warp = field_on_grid(device, field_image(nl.grid, u.read_all(q)), tg);
    Image inverse = field_on_grid(device, field_image(nl.grid, w.read_all(q)), tg);

    // The Jacobian determinant and the inverse's residual on the template's grid, in its voxel units.
    const auto tn = static_cast<size_t>(tg.voxels_per_volume());
    DeformationOps ops(device, tg.dims);
    const Eigen::Matrix3d to_voxels = tg.affine.topLeftCorner<3, 3>().inverse();
    DeviceBuffer<float> tu(device, 3 * tn), tw(device, 3 * tn), residual(device, 3 * tn), det(device, tn);
    tu.write(q, warp.data());
    tw.write(q, inverse.data());
    ops.transform_vectors(tu, tu, to_voxels);
    ops.transform_vectors(tw, tw, to_voxels);
    ops.jacobian(tu, det);
    ops.compose(tu, tw, residual, 1.0f);  // inverse(warp(x)) - x
    ops.transform_vectors(residual, residual, tg.affine.topLeftCorner<3, 3>());
    ImageHeader jh = tg;
    jh.num_volumes = 1;
    jh.tr_s = 0.0;
    jh.source_type = DataType::kFloat32;
    jh.vector_components = false;
    auto jacobian = std::make_shared<Image>(jh, det.read_all(q));
    const std::vector<float> r = residual.read_all(q);
    JacobianSummary& js = result.jacobian_summary;
    js.voxels = static_cast<int64_t>(tn);
    js.min = INFINITY;
    js.max = -INFINITY;
    double error_sum = 0.0;
    int64_t brain = 0;
    const std::vector<float>& tdata = template_image.data();
    for (size_t i = 0; i < tn; ++i) {
      const double d = jacobian->data()[i];
      js.min = std::min(js.min, d);
      js.max = std::max(js.max, d);
      const bool in_brain = std::isfinite(tdata[i]) && tdata[i] > 0.0f;
      if (!(d > 0.0)) {
        ++js.folded;
        if (in_brain) ++js.folded_in_mask;
      }
      if (!in_brain) continue;
      const double e = std::sqrt(static_cast<double>(r[i]) * r[i] + static_cast<double>(r[tn + i]) * r[tn + i] +
                                 static_cast<double>(r[2 * tn + i]) * r[2 * tn + i]);
      result.inverse_error_max_mm = std::max(result.inverse_error_max_mm, e);
      error_sum += e;
      ++brain;
    }
    result.inverse_error_mean_mm = brain > 0 ? error_sum / static_cast<double>(brain) : 0.0;
    result.warp = std::make_shared<const Image>(std::move(warp));
    result.inverse_warp = std::make_shared<const Image>(std::move(inverse));
    result.jacobian = std::move(jacobian);
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
