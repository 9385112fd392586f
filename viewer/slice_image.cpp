// render_slice and the colour maps.
#include "viewer/slice_image.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace rtf::viewer {

std::pair<float, float> robust_range(std::span<const float> volume) {
  std::vector<float> v;
  v.reserve(volume.size());
  for (float x : volume) {
    if (std::isfinite(x) && x != 0.0f) v.push_back(x);
  }
  if (v.empty()) return {0.0f, 1.0f};
  auto at = [&](double q) {
    const auto k = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
  };
  const float lo = at(0.02), hi = at(0.995);
  return {lo, hi > lo ? hi : lo + 1.0f};
}

std::array<uint8_t, 3> hot_colour(float t) {
  t = std::clamp(t, 0.0f, 1.0f);
  auto c = [](float x) { return static_cast<uint8_t>(std::clamp(x, 0.0f, 1.0f) * 255.0f); };
  return {c(0.6f + 1.2f * t), c(2.0f * t - 0.2f), c(3.0f * t - 2.0f)};  // dark red -> red -> yellow -> white
}

std::array<uint8_t, 3> cool_colour(float t) {
  t = std::clamp(t, 0.0f, 1.0f);
  auto c = [](float x) { return static_cast<uint8_t>(std::clamp(x, 0.0f, 1.0f) * 255.0f); };
  return {c(2.0f * t - 1.0f), c(0.3f + 0.7f * t), c(0.7f + 0.6f * t)};  // dark blue -> cyan -> white
}

std::array<uint8_t, 3> diverging_colour(float r) {
  if (!std::isfinite(r)) return {40, 40, 40};
  r = std::clamp(r, -1.0f, 1.0f);
  const auto fade = static_cast<uint8_t>(255.0f * (1.0f - std::abs(r)));
  return r >= 0 ? std::array<uint8_t, 3>{255, fade, fade} : std::array<uint8_t, 3>{fade, fade, 255};
}

std::array<int64_t, 3> slice_pixel_to_voxel(Plane plane, std::array<int64_t, 3> dims, std::array<int64_t, 3> cursor,
                                            int px, int py) {
  switch (plane) {
    case Plane::kAxial:
      return {px, dims[1] - 1 - py, cursor[2]};
    case Plane::kCoronal:
      return {px, cursor[1], dims[2] - 1 - py};
    case Plane::kSagittal:
      return {cursor[0], px, dims[2] - 1 - py};
  }
  return cursor;
}

SliceImage render_slice(std::span<const float> volume, std::span<const float> map, std::array<int64_t, 3> dims,
                        std::array<double, 3> voxel_mm, Plane plane, std::array<int64_t, 3> cursor,
                        std::pair<float, float> window, const OverlaySettings& overlay) {
  SliceImage img;
  const int horizontal = plane == Plane::kSagittal ? 1 : 0;
  const int vertical = plane == Plane::kAxial ? 1 : 2;
  img.width = static_cast<int>(dims[horizontal]);
  img.height = static_cast<int>(dims[vertical]);
  img.pixel_aspect = voxel_mm[horizontal] / voxel_mm[vertical];
  img.rgba.assign(static_cast<size_t>(img.width) * static_cast<size_t>(img.height) * 4, 0);
  const int64_t n = dims[0] * dims[1] * dims[2];
  const bool has_volume = static_cast<int64_t>(volume.size()) == n;
  const bool has_map = static_cast<int64_t>(map.size()) == n;
  const float scale = 1.0f / std::max(window.second - window.first, 1e-6f);
  for (int py = 0; py < img.height; ++py) {
    for (int px = 0; px < img.width; ++px) {
      const auto v = slice_pixel_to_voxel(plane, dims, cursor, px, py);
      const auto i = static_cast<size_t>(v[0] + dims[0] * (v[1] + dims[1] * v[2]));
      uint8_t* out =
          &img.rgba[(static_cast<size_t>(py) * static_cast<size_t>(img.width) + static_cast<size_t>(px)) * 4];
      float grey = has_volume && std::isfinite(volume[i]) ? (volume[i] - window.first) * scale : 0.0f;
      const auto g = static_cast<uint8_t>(std::clamp(grey, 0.0f, 1.0f) * 255.0f);
      std::array<uint8_t, 3> rgb{g, g, g};
      const bool in_brain = !has_volume || !(volume[i] < overlay.min_underlay);
      if (has_map && in_brain && std::isfinite(map[i])) {
        const float m = map[i];
        const float span = std::max(overlay.maximum - overlay.threshold, 1e-6f);
        std::array<uint8_t, 3> c{};
        bool coloured = false;
        if (overlay.positive && m >= overlay.threshold) {
          c = hot_colour((m - overlay.threshold) / span);
          coloured = true;
        } else if (overlay.negative && m <= -overlay.threshold) {
          c = cool_colour((-m - overlay.threshold) / span);
          coloured = true;
        }
        if (coloured) {
          for (int k = 0; k < 3; ++k) {
            rgb[k] = static_cast<uint8_t>(overlay.opacity * c[k] + (1.0f - overlay.opacity) * rgb[k]);
          }
        }
      }
      out[0] = rgb[0];
      out[1] = rgb[1];
      out[2] = rgb[2];
      out[3] = 255;
    }
  }
  return img;
}

std::array<uint8_t, 3> roi_colour(size_t k) {
  static constexpr std::array<std::array<uint8_t, 3>, 6> kPalette{
      {{255, 0, 255}, {0, 255, 255}, {0, 255, 0}, {255, 255, 0}, {150, 110, 255}, {255, 255, 255}}};
  return kPalette[k % kPalette.size()];
}

int64_t draw_roi_outlines(SliceImage& image, std::span<const float> labels, std::array<int64_t, 3> dims, Plane plane,
                          std::array<int64_t, 3> cursor) {
  if (static_cast<int64_t>(labels.size()) != dims[0] * dims[1] * dims[2] || image.width <= 0) return 0;
  const auto bits_at = [&](int px, int py) -> uint32_t {
    if (px < 0 || py < 0 || px >= image.width || py >= image.height) return 0;
    const auto v = slice_pixel_to_voxel(plane, dims, cursor, px, py);
    const float value = labels[static_cast<size_t>(v[0] + dims[0] * (v[1] + dims[1] * v[2]))];
    return std::isfinite(value) && value > 0.0f ? static_cast<uint32_t>(value) : 0u;
  };
  int64_t drawn = 0;
  for (int py = 0; py < image.height; ++py) {
    for (int px = 0; px < image.width; ++px) {
      const uint32_t here = bits_at(px, py);
      if (here == 0) continue;
      // Bits set here but missing in a neighbour: this pixel is on those ROIs' edge.
      const uint32_t edge =
          here & ~(bits_at(px - 1, py) & bits_at(px + 1, py) & bits_at(px, py - 1) & bits_at(px, py + 1));
      if (edge == 0) continue;
      const auto c = roi_colour(static_cast<size_t>(std::countr_zero(edge)));
      uint8_t* out =
          &image.rgba[(static_cast<size_t>(py) * static_cast<size_t>(image.width) + static_cast<size_t>(px)) * 4];
      out[0] = c[0];
      out[1] = c[1];
      out[2] = c[2];
      ++drawn;
    }
  }
  return drawn;
}

std::array<int64_t, 3> roi_centre(std::span<const float> labels, std::array<int64_t, 3> dims, size_t k) {
  std::array<double, 3> sum{0, 0, 0};
  int64_t count = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (!(labels[i] > 0.0f) || ((static_cast<uint32_t>(labels[i]) >> k) & 1u) == 0) continue;
    const auto index = static_cast<int64_t>(i);
    const int64_t x = index % dims[0], y = (index / dims[0]) % dims[1], z = index / (dims[0] * dims[1]);
    sum[0] += static_cast<double>(x);
    sum[1] += static_cast<double>(y);
    sum[2] += static_cast<double>(z);
    ++count;
  }
  if (count == 0) return {-1, -1, -1};
  std::array<int64_t, 3> c{};
  for (size_t a = 0; a < 3; ++a) c[a] = std::llround(sum[a] / static_cast<double>(count));
  return c;
}

}  // namespace rtf::viewer
