// Template-based brain extraction: the subject's image (a T1 with skull, or an EPI volume) is registered to a template
// head (linear, on the device), and the template's brain mask is pulled back onto the subject's grid through the
// inverse transform (trilinear interpolation of the 0/1 mask, kept where >= 0.5). docs/algorithms/brain_mask.md.
// Affine only: the mask's edge follows the template's brain to within the subject's anatomical differences from it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/device/device.hpp"
#include "core/image/image.hpp"
#include "core/registration/linear_registration.hpp"

namespace rtf {

struct TemplateMaskSpec {
  // MI by default: it works for a T1 (same contrast as the template) and for an EPI (not).
  LinearRegistrationOptions registration{.dof = 12, .cost = LinearCost::kMi};
};

struct TemplateMask {
  std::vector<uint8_t> inside;  // one byte per subject voxel, 1 = brain
  int64_t count = 0;
  LinearRegistrationResult registration;  // template world -> subject world
};

// `subject`: 3D; `template_head`: the template with skull (what the subject looks like); `template_brain`: on the
// template's grid, nonzero = brain (e.g. the brain-extracted template). Throws std::invalid_argument when the brain
// image is not on the template's grid or is empty, and std::runtime_error when the registration fails.
TemplateMask template_brain_mask(Device& device, const Image& subject, const Image& template_head,
                                 const Image& template_brain, const TemplateMaskSpec& spec = {});

}  // namespace rtf
