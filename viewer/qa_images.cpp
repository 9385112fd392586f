// carpet_image, axial_mosaic and robust_abs_max.
#include "viewer/qa_images.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace rtf::viewer {

namespace {

int64_t shown_rows(const QaCarpet& carpet, int64_t max_rows) {
  return std::min(carpet.rows(), std::max<int64_t>(max_rows, 1));
}

}  // namespace

SliceImage carpet_image(const QaCarpet& carpet, int64_t max_rows) {
  SliceImage img;
  if (carpet.columns() == 0 || carpet.rows() <= 0) return img;
  const int64_t rows = shown_rows(carpet, max_rows);
  img.width = static_cast<int>(carpet.columns());
  img.height = static_cast<int>(rows);
  img.rgba.assign(static_cast<size_t>(img.width) * static_cast<size_t>(img.height) * 4, 255);
  for (int x = 0; x < img.width; ++x) {
    const std::span<const float> column = carpet.column(static_cast<size_t>(x));
    for (int y = 0; y < img.height; ++y) {
      // Output row y shows the input row at its centre.
      const auto row = static_cast<size_t>((2 * static_cast<int64_t>(y) + 1) * carpet.rows() / (2 * rows));
      const float v = column[row];
      uint8_t* out = &img.rgba[(static_cast<size_t>(y) * static_cast<size_t>(img.width) + static_cast<size_t>(x)) * 4];
      if (!std::isfinite(v)) {
        out[0] = 20;
        out[1] = 20;
        out[2] = 70;
        continue;
      }
      const auto g = static_cast<uint8_t>(std::lround(std::clamp((v + 2.0f) / 4.0f, 0.0f, 1.0f) * 255.0f));
      out[0] = out[1] = out[2] = g;
    }
  }
  return img;
}

int64_t carpet_split_row(const QaCarpet& carpet, int64_t max_rows) {
  if (carpet.rows() <= 0 || carpet.split() <= 0) return 0;
  const int64_t rows = shown_rows(carpet, max_rows);
  return (carpet.split() * rows + carpet.rows() / 2) / carpet.rows();
}

MosaicLayout mosaic_layout(std::array<int64_t, 3> dims) {
  MosaicLayout m;
  if (dims[0] <= 0 || dims[1] <= 0 || dims[2] <= 0) return m;
  m.tile_width = dims[0];
  m.tile_height = dims[1];
  m.columns = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(dims[2]))));
  m.rows = (dims[2] + m.columns - 1) / m.columns;
  return m;
}

std::pair<int64_t, int64_t> mosaic_tile(const MosaicLayout& layout, int64_t z) {
  if (layout.columns <= 0) return {0, 0};
  return {(z % layout.columns) * layout.tile_width, (z / layout.columns) * layout.tile_height};
}

float robust_abs_max(std::span<const float> map) {
  std::vector<float> v;
  v.reserve(map.size());
  for (float x : map) {
    if (std::isfinite(x) && x != 0.0f) v.push_back(std::fabs(x));
  }
  if (v.empty()) return 1.0f;
  const auto k = static_cast<size_t>(0.995 * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

SliceImage axial_mosaic(std::span<const float> volume, std::span<const float> map, std::array<int64_t, 3> dims,
                        std::array<double, 3> voxel_mm, std::pair<float, float> window,
                        const OverlaySettings& overlay) {
  SliceImage img;
  const MosaicLayout m = mosaic_layout(dims);
  if (m.columns == 0) return img;
  img.width = static_cast<int>(m.columns * m.tile_width);
  img.height = static_cast<int>(m.rows * m.tile_height);
  img.pixel_aspect = voxel_mm[0] / voxel_mm[1];
  img.rgba.assign(static_cast<size_t>(img.width) * static_cast<size_t>(img.height) * 4, 0);
  for (size_t i = 3; i < img.rgba.size(); i += 4) img.rgba[i] = 255;
  for (int64_t z = 0; z < dims[2]; ++z) {
    const SliceImage tile = render_slice(volume, map, dims, voxel_mm, Plane::kAxial, {0, 0, z}, window, overlay);
    const auto [x0, y0] = mosaic_tile(m, z);
    const auto row_bytes = static_cast<size_t>(tile.width) * 4;
    for (int y = 0; y < tile.height; ++y) {
      std::memcpy(&img.rgba[((static_cast<size_t>(y0) + static_cast<size_t>(y)) * static_cast<size_t>(img.width) +
                             static_cast<size_t>(x0)) *
                            4],
                  &tile.rgba[static_cast<size_t>(y) * row_bytes], row_bytes);
    }
  }
  return img;
}

}  // namespace rtf::viewer
