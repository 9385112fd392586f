// Orthogonal slices as RGBA images: a grey underlay (the motion-corrected volume, robust intensity window) with a
// thresholded statistical map on top (hot colours above +threshold, cool below -threshold). Pure CPU; the UI uploads
// the result as a texture. Orientation: axial rows run from +y (top) to -y, coronal and sagittal from +z (top);
// columns from -x to +x (axial, coronal) and -y to +y (sagittal), in voxel axes.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace rtf::viewer {

enum class Plane { kAxial, kCoronal, kSagittal };

struct OverlaySettings {
  float threshold = 3.1f;  // |map| at or above it is coloured
  float maximum = 8.0f;    // |map| at which the colour saturates
  bool positive = true;
  bool negative = true;
  float opacity = 1.0f;
  // Colour only where the underlay is at least this (e.g. a fraction of the brain's intensity, so that maps are not
  // drawn over the background noise); -inf: everywhere.
  float min_underlay = -std::numeric_limits<float>::infinity();
};

struct SliceImage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgba;  // rows top to bottom
  double pixel_aspect = 1.0;  // physical width / height of one pixel
};

// The 2nd and 99.5th percentiles of the volume's non-zero finite values (a display window robust to outliers).
std::pair<float, float> robust_range(std::span<const float> volume);

// One slice through voxel `cursor` of `volume` (x fastest, dims) with `map` (same grid; empty: no overlay).
SliceImage render_slice(std::span<const float> volume, std::span<const float> map, std::array<int64_t, 3> dims,
                        std::array<double, 3> voxel_mm, Plane plane, std::array<int64_t, 3> cursor,
                        std::pair<float, float> window, const OverlaySettings& overlay);

// Colour maps: t in [0, 1].
std::array<uint8_t, 3> hot_colour(float t);
std::array<uint8_t, 3> cool_colour(float t);
// Blue (-1) - white (0) - red (+1).
std::array<uint8_t, 3> diverging_colour(float r);

// The outline colour of ROI k (magenta, cyan, green, yellow, ...: none of them a colour of the hot or cool maps).
std::array<uint8_t, 3> roi_colour(size_t k);

// Outlines of the ROIs over a slice made by render_slice (same plane and cursor): a pixel takes ROI k's colour when
// its voxel lies in ROI k (bit k of `labels`, one value per voxel, x fastest) and one of its four in-plane neighbours
// does not or lies outside the slice; with several ROIs the lowest k wins. Returns the pixels drawn (0 when `labels`
// does not match the grid).
int64_t draw_roi_outlines(SliceImage& image, std::span<const float> labels, std::array<int64_t, 3> dims, Plane plane,
                          std::array<int64_t, 3> cursor);

// The voxel at the rounded mean position of ROI k's voxels ({-1, -1, -1} when the ROI has none).
std::array<int64_t, 3> roi_centre(std::span<const float> labels, std::array<int64_t, 3> dims, size_t k);

// The voxel shown at pixel (px, py) of a slice of `plane` through `cursor`.
std::array<int64_t, 3> slice_pixel_to_voxel(Plane plane, std::array<int64_t, 3> dims, std::array<int64_t, 3> cursor,
                                            int px, int py);

}  // namespace rtf::viewer
