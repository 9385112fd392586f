// Displacement fields as transforms: T(x) = x + u(x), u interpolated trilinearly on the field's own grid and 0 outside
// it (as ITK's DisplacementFieldTransform), and their files: ITK's convention, a NIfTI vector image (intent 1007,
// 5D: x, y, z, 1, 3) whose three components are the displacement in LPS mm at each voxel. In memory the field is an
// Image with three volumes: the x, y and z components in RAS mm (ours). docs/algorithms/registration.md.
#pragma once

#include <Eigen/Core>
#include <filesystem>
#include <memory>
#include <variant>
#include <vector>

#include "core/image/image.hpp"

namespace rtf {

// A RAS field on `grid`: three float volumes (x, y and z components, each x fastest), marked as a vector image.
Image displacement_field_image(const ImageHeader& grid, std::vector<float> data);

// Reads an ITK displacement field and converts it to RAS. Throws std::runtime_error naming the file unless it is a 3D
// grid with exactly three vector components (or, leniently, a 4D image of three volumes) and finite values.
Image read_displacement_field(const std::filesystem::path& path);

// Writes a RAS field (three volumes) as an ITK displacement field (LPS, intent 1007, 5D), atomically.
void write_displacement_field(const std::filesystem::path& path, const Image& ras_field);

// One transform of a chain: an affine (world -> world, 4x4) or a displacement field (shared: chains are copied).
using SpatialTransform = std::variant<Eigen::Matrix4d, std::shared_ptr<const Image>>;

}  // namespace rtf
