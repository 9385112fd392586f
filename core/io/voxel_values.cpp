// write_voxel_values: a zero image on the grid, the listed voxels set, written as float NIfTI.
#include "core/io/voxel_values.hpp"

#include <stdexcept>

#include "core/io/nifti_io.hpp"

namespace rtf {

void write_voxel_values(const std::string& path, const ImageHeader& grid, const std::vector<int64_t>& voxels,
                        const std::vector<double>& values) {
  if (voxels.size() != values.size()) throw std::logic_error("write_voxel_values: sizes differ");
  ImageHeader h = grid;
  h.num_volumes = 1;
  h.tr_s = 0.0;
  h.source_type = DataType::kFloat32;
  Image image(h, 0.0f);
  for (size_t k = 0; k < voxels.size(); ++k)
    image.data()[static_cast<size_t>(voxels[k])] = static_cast<float>(values[k]);
  write_nifti(path, image);
}

}  // namespace rtf
