// The mosaic's shape check (the unpacking itself is a template in the header).
#include "core/dicom/mosaic_layout.hpp"

#include <fmt/format.h>

namespace rtf::dicom {

void check_mosaic(const MosaicShape& shape) {
  const int side = shape.side();
  if (shape.slices < 1 || shape.rows < side || shape.columns < side || shape.rows % side != 0 ||
      shape.columns % side != 0) {
    throw std::invalid_argument(fmt::format("a {} x {} mosaic cannot hold {} slices in {} x {} whole tiles", shape.rows,
                                            shape.columns, shape.slices, side, side));
  }
}

}  // namespace rtf::dicom
