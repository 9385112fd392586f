// Displacement fields: ITK files (LPS) <-> RAS fields, and a point through one transform of a chain.
#include "core/registration/displacement_field.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "core/io/nifti_io.hpp"

namespace rtf {

namespace {

// LPS <-> RAS for displacement vectors: the x and y components change sign.
Image flip_components(Image field) {
  const auto n = static_cast<size_t>(field.header().voxels_per_volume());
  for (size_t i = 0; i < 2 * n; ++i) field.data()[i] = -field.data()[i];
  return field;
}

}  // namespace

Image displacement_field_image(const ImageHeader& grid, std::vector<float> data) {
  ImageHeader h = grid;
  h.num_volumes = 3;
  h.tr_s = 0.0;
  h.source_type = DataType::kFloat32;
  h.vector_components = true;
  return Image(h, std::move(data));
}

Image read_displacement_field(const std::filesystem::path& path) {
  Image field = read_nifti(path);
  if (field.nt() != 3) {
    throw std::runtime_error(fmt::format(
        "{}: a displacement field needs three vector components per voxel (NIfTI intent 1007, dims x, y, z, 1, 3); "
        "this image has {}",
        path.string(), field.nt()));
  }
  for (float v : field.data()) {
    if (!std::isfinite(v))
      throw std::runtime_error(fmt::format("{}: the displacement field has NaN or infinite values", path.string()));
  }
  field.header().vector_components = true;
  return flip_components(std::move(field));
}

void write_displacement_field(const std::filesystem::path& path, const Image& ras_field) {
  if (ras_field.nt() != 3) throw std::invalid_argument("write_displacement_field: the field needs three volumes");
  Image lps = flip_components(ras_field);
  lps.header().vector_components = true;
  lps.header().tr_s = 0.0;
  write_nifti(path, lps);
}

}  // namespace rtf
