// The pictures of qa_report.html, rasterised on the host into RGB images (no text: the page writes the numbers around
// them): the carpet plot (Power 2017), a line plot per trace, the tSNR mosaic and its colour bar.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace rtf {

// 8-bit RGB, rows top to bottom, 3 bytes a pixel.
struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
};

// Each of `rows` series (row-major, `volumes` values each) z-scored over time (population SD over its finite values; 0
// where the SD is 0; non-finite values left out), averaged over blocks so that the image is at most max_width x
// max_height, and drawn grey from -2 SD (black) to +2 SD (white). With 0 < split < rows the rows before `split` and
// the rest are binned apart and one orange pixel row separates them (counted in max_height). rows, volumes >= 1.
struct CarpetImage {
  RgbImage image;
  int64_t rows_per_pixel = 1, volumes_per_pixel = 1;  // the largest block, for the caption
  int split_pixel_row = -1;                           // the separator's row; -1: none
};
CarpetImage carpet_image(std::span<const float> carpet, int64_t rows, int64_t volumes, int64_t split,
                         int max_width = 1200, int max_height = 600);

// The finite values against their index (gaps at NaN, a dot for a value without finite neighbours) in blue, a dashed
// red line at a finite `threshold`, light grid lines and tick marks at nice steps. The y axis spans the values and the
// threshold, widened to whole steps (top row: y_max, bottom row: y_min, less `kTracePad` pixels at each edge).
// No finite value: an empty image.
inline constexpr int kTracePad = 3;
struct TracePlot {
  RgbImage image;
  double y_min = 0, y_max = 0, y_step = 0;
  int64_t x_step = 1;  // volumes between vertical grid lines
};
TracePlot trace_plot(std::span<const double> values, double threshold, int width = 760, int height = 150);

// Axial slices (z) tiled left to right, top to bottom, each slice with x to the right and y up; tSNR through the
// viridis colour map from 0 to `range_max` (the 99th percentile of the finite values inside the mask), values inside
// the mask that are not finite magenta, outside the mask dark grey, between tiles black. Large grids are shown every
// `slice_step`-th slice and averaged over `in_plane_step`^2 blocks (at most ~1.5 million pixels). An empty mask
// counts every voxel as inside. dims all >= 1, tsnr (and mask when not empty) of dims' product.
struct MosaicImage {
  RgbImage image;
  double range_max = 0;
  int64_t slice_step = 1, in_plane_step = 1, slices_shown = 0, columns = 0;
};
MosaicImage tsnr_mosaic(std::array<int64_t, 3> dims, std::span<const float> tsnr, std::span<const uint8_t> mask);

// viridis at t in [0, 1] (clamped), from matplotlib's table at nine points, linearly interpolated.
std::array<uint8_t, 3> viridis(double t);

// A horizontal bar of viridis from 0 (left) to 1 (right).
RgbImage viridis_bar(int width = 256, int height = 12);

}  // namespace rtf
