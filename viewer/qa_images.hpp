// The QA panel's pictures as RGBA images, pure CPU (the UI uploads them as textures): the carpet (one column per
// volume, oldest left; grey from -2 SD black to +2 SD white) and a mosaic of the axial slices with a map over them
// (the tSNR or CNR map, drawn with render_slice's colours).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <utility>

#include "viewer/qa_data.hpp"
#include "viewer/slice_image.hpp"

namespace rtf::viewer {

// One pixel per column and per row, at most `max_rows` rows (rows are then picked evenly, not averaged: averaging
// z scores would flatten the picture); NaN values are dark blue. Empty image: no column yet.
SliceImage carpet_image(const QaCarpet& carpet, int64_t max_rows = 1024);

// The row of carpet_image(carpet, max_rows) where the grey-matter rows end (0: no split known).
int64_t carpet_split_row(const QaCarpet& carpet, int64_t max_rows = 1024);

struct MosaicLayout {
  int64_t columns = 0, rows = 0;  // tiles
  int64_t tile_width = 0, tile_height = 0;
};

MosaicLayout mosaic_layout(std::array<int64_t, 3> dims);
// The top-left pixel of slice z's tile (z = 0 top left, rows of tiles left to right).
std::pair<int64_t, int64_t> mosaic_tile(const MosaicLayout& layout, int64_t z);

// Every axial slice of `volume` (underlay; empty: black) with `map` over it, tiled as mosaic_layout says; each tile
// as render_slice draws it (+y up). Unused tiles are black.
// The 99.5th percentile of |value| over the finite non-zero values (a signed map's colour scale, robust to outliers);
// 1 when there is none.
float robust_abs_max(std::span<const float> map);

SliceImage axial_mosaic(std::span<const float> volume, std::span<const float> map, std::array<int64_t, 3> dims,
                        std::array<double, 3> voxel_mm, std::pair<float, float> window, const OverlaySettings& overlay);

}  // namespace rtf::viewer
