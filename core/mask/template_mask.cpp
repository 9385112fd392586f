// template_brain_mask: register the subject to the template head, pull the template's brain mask back.
#include "core/mask/template_mask.hpp"

#include <Eigen/LU>
#include <stdexcept>

#include "core/registration/resample.hpp"

namespace rtf {

TemplateMask template_brain_mask(Device& device, const Image& subject, const Image& template_head,
                                 const Image& template_brain, const TemplateMaskSpec& spec) {
  if (!template_brain.header().same_grid(template_head.header())) {
    throw std::invalid_argument("template mask: the template's brain image is not on the template's grid");
  }
  Image brain = template_brain.extract_volume(0);
  int64_t brain_voxels = 0;
  for (float& v : brain.data()) {
    v = v != 0.0f && v == v ? 1.0f : 0.0f;
    brain_voxels += v != 0.0f;
  }
  if (brain_voxels == 0) throw std::invalid_argument("template mask: the template's brain image is empty");
  // The template is the fixed image: the transform maps template points to subject points.
  LinearRegistration registration(device, template_head, subject, spec.registration);
  TemplateMask out;
  out.registration = registration.run(centre_of_mass_alignment(template_head, subject));
  if (!out.registration.failure.empty()) {
    throw std::runtime_error("template mask: registration to the template failed: " + out.registration.failure);
  }
  ImageHeader grid = subject.header();
  grid.num_volumes = 1;
  const Image pulled = resample(device, brain, grid, {Eigen::Matrix4d(out.registration.transform.inverse())},
                                ResampleInterpolation::kLinear);
  out.inside.resize(pulled.data().size());
  for (size_t i = 0; i < pulled.data().size(); ++i) {
    out.inside[i] = pulled.data()[i] >= 0.5f ? 1 : 0;
    out.count += out.inside[i];
  }
  return out;
}

}  // namespace rtf
