// A transform named on a command line or in a session file, as antsApplyTransforms takes them: "FILE" or "[FILE,1]"
// (the inverse; "[FILE,0]" is FILE). A .nii / .nii.gz is an ITK displacement field, anything else an ITK text affine
// (docs/algorithms/registration.md).
#pragma once

#include <string>

#include "core/registration/displacement_field.hpp"

namespace rtf {

// Throws std::invalid_argument for the inverse of a displacement field (no closed form: registration writes the
// inverse field beside it) or a non-invertible affine, and std::runtime_error for a file that cannot be read.
SpatialTransform read_transform_spec(const std::string& argument);

}  // namespace rtf
