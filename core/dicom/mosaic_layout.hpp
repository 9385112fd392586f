// Siemens classic mosaics (issue 18): a mosaic stores a volume's slices as tiles of one 2D image, ceil(sqrt(n)) tiles
// per side, row-major, slice k in tile (k / side, k % side), unused tiles black. Unpacking gives the volume in NIfTI
// order as dcm2niix writes it (x = DICOM column, y = tile rows - 1 - DICOM row: rows bottom-up, z = slice), the
// order core/dicom/dicom_affine.hpp's mosaic_affine describes; packing is its inverse (for `rtfmri sim dicom`).
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <vector>

#include "core/dicom/dicom_affine.hpp"

namespace rtf::dicom {

struct MosaicShape {
  int rows = 0, columns = 0;  // of the mosaic image
  int slices = 0;             // CSA NumberOfImagesInMosaic
  int side() const { return mosaic_tiles_per_side(slices); }
  int tile_rows() const { return rows / side(); }
  int tile_columns() const { return columns / side(); }
};

// Throws std::invalid_argument unless the mosaic holds side x side whole tiles of at least one pixel and `slices` >= 1.
void check_mosaic(const MosaicShape& shape);

// The volume [slice][y][x] (x fastest) of a mosaic stored row-major (`mosaic`: rows x columns values).
template <typename T>
std::vector<T> unpack_mosaic(std::span<const T> mosaic, const MosaicShape& shape) {
  check_mosaic(shape);
  if (mosaic.size() != static_cast<size_t>(shape.rows) * static_cast<size_t>(shape.columns)) {
    throw std::invalid_argument("mosaic pixel count does not match its rows x columns");
  }
  const auto side = static_cast<size_t>(shape.side()), tr = static_cast<size_t>(shape.tile_rows()),
             tc = static_cast<size_t>(shape.tile_columns()), columns = static_cast<size_t>(shape.columns);
  std::vector<T> volume(static_cast<size_t>(shape.slices) * tr * tc);
  for (size_t k = 0; k < static_cast<size_t>(shape.slices); ++k) {
    const size_t row0 = (k / side) * tr, column0 = (k % side) * tc;
    for (size_t y = 0; y < tr; ++y) {
      const T* src = mosaic.data() + (row0 + tr - 1 - y) * columns + column0;
      std::copy(src, src + tc, volume.begin() + static_cast<std::ptrdiff_t>((k * tr + y) * tc));
    }
  }
  return volume;
}

// The mosaic (row-major, rows x columns, unused tiles 0) of a volume [slice][y][x] in unpack_mosaic's order.
template <typename T>
std::vector<T> pack_mosaic(std::span<const T> volume, const MosaicShape& shape) {
  check_mosaic(shape);
  const auto side = static_cast<size_t>(shape.side()), tr = static_cast<size_t>(shape.tile_rows()),
             tc = static_cast<size_t>(shape.tile_columns()), columns = static_cast<size_t>(shape.columns);
  if (volume.size() != static_cast<size_t>(shape.slices) * tr * tc) {
    throw std::invalid_argument("volume size does not match the mosaic's tiles x slices");
  }
  std::vector<T> mosaic(static_cast<size_t>(shape.rows) * columns, T{});
  for (size_t k = 0; k < static_cast<size_t>(shape.slices); ++k) {
    const size_t row0 = (k / side) * tr, column0 = (k % side) * tc;
    for (size_t y = 0; y < tr; ++y) {
      const T* src = volume.data() + (k * tr + y) * tc;
      std::copy(src, src + tc, mosaic.begin() + static_cast<std::ptrdiff_t>((row0 + tr - 1 - y) * columns + column0));
    }
  }
  return mosaic;
}

}  // namespace rtf::dicom
