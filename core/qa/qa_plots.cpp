// Host rasterising of the QA report's pictures: block averages for the carpet and the mosaic, Bresenham lines for the
// traces. Every size is bounded by its arguments, whatever the run's length or grid.
#include "core/qa/qa_plots.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace rtf {

namespace {

using Rgb = std::array<uint8_t, 3>;

constexpr Rgb kWhite{255, 255, 255};
constexpr Rgb kGrid{232, 232, 232};
constexpr Rgb kTick{90, 90, 90};
constexpr Rgb kLine{31, 95, 168};
constexpr Rgb kThreshold{214, 39, 40};
constexpr Rgb kSplit{255, 140, 0};
constexpr Rgb kOutside{28, 28, 28};
constexpr Rgb kGap{0, 0, 0};
constexpr Rgb kNonFinite{255, 0, 255};

RgbImage blank(int width, int height, Rgb colour) {
  RgbImage img{width, height, {}};
  img.rgb.resize(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  for (size_t i = 0; i < img.rgb.size(); i += 3) std::copy(colour.begin(), colour.end(), img.rgb.begin() + i);
  return img;
}

void put(RgbImage& img, int x, int y, Rgb colour) {
  if (x < 0 || y < 0 || x >= img.width || y >= img.height) return;
  const size_t i = (static_cast<size_t>(y) * static_cast<size_t>(img.width) + static_cast<size_t>(x)) * 3;
  std::copy(colour.begin(), colour.end(), img.rgb.begin() + static_cast<std::ptrdiff_t>(i));
}

// A 2x2 pen along Bresenham's line from (x0, y0) to (x1, y1).
void line(RgbImage& img, int x0, int y0, int x1, int y1, Rgb colour) {
  const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
  const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  int err = dx + dy;
  for (;;) {
    put(img, x0, y0, colour);
    put(img, x0 + 1, y0, colour);
    put(img, x0, y0 + 1, colour);
    put(img, x0 + 1, y0 + 1, colour);
    if (x0 == x1 && y0 == y1) break;
    const int e2 = 2 * err;
    if (e2 >= dy) {
      err += dy;
      x0 += sx;
    }
    if (e2 <= dx) {
      err += dx;
      y0 += sy;
    }
  }
}

// 1, 2 or 5 times a power of ten, about span / ticks.
double nice_step(double span, double ticks) {
  const double raw = span / ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / magnitude;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * magnitude;
}

// Item i of n in k <= n consecutive bins, none empty.
int64_t bin_of(int64_t i, int64_t n, int64_t k) {
  return i * k / n;
}
int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

std::array<uint8_t, 3> viridis(double t) {
  static constexpr std::array<Rgb, 9> kTable{{{68, 1, 84},
                                              {71, 44, 122},
                                              {59, 82, 139},
                                              {44, 113, 142},
                                              {33, 145, 140},
                                              {39, 173, 129},
                                              {92, 200, 99},
                                              {170, 220, 50},
                                              {253, 231, 37}}};
  if (!(t > 0)) t = 0;  // NaN too
  t = std::min(t, 1.0) * 8;
  const auto i = std::min<size_t>(static_cast<size_t>(t), 7);
  const double f = t - static_cast<double>(i);
  Rgb c{};
  for (size_t k = 0; k < 3; ++k) {
    c[k] = static_cast<uint8_t>(std::lround((1 - f) * kTable[i][k] + f * kTable[i + 1][k]));
  }
  return c;
}

RgbImage viridis_bar(int width, int height) {
  RgbImage img = blank(width, height, kWhite);
  for (int x = 0; x < width; ++x) {
    const Rgb c = viridis(width > 1 ? static_cast<double>(x) / (width - 1) : 0.0);
    for (int y = 0; y < height; ++y) put(img, x, y, c);
  }
  return img;
}

CarpetImage carpet_image(std::span<const float> carpet, int64_t rows, int64_t volumes, int64_t split, int max_width,
                         int max_height) {
  if (rows < 1 || volumes < 1 || carpet.size() != static_cast<size_t>(rows * volumes) || max_width < 1 ||
      max_height < 3) {
    throw std::invalid_argument("carpet_image: the carpet's size does not match rows x volumes");
  }
  const bool has_split = split > 0 && split < rows;
  const int64_t width = std::min<int64_t>(volumes, max_width);
  const int64_t data_rows = std::min<int64_t>(rows, has_split ? max_height - 1 : max_height);
  int64_t top_rows = data_rows;  // pixel rows of the part before the split
  if (has_split) {
    const auto wanted = static_cast<int64_t>(std::llround(static_cast<double>(data_rows * split) / rows));
    top_rows = std::clamp(wanted, std::max<int64_t>(1, data_rows - (rows - split)), std::min(split, data_rows - 1));
  }
  const int64_t height = data_rows + (has_split ? 1 : 0);
  auto pixel_row = [&](int64_t r) {
    if (!has_split) return bin_of(r, rows, data_rows);
    if (r < split) return bin_of(r, split, top_rows);
    return top_rows + 1 + bin_of(r - split, rows - split, data_rows - top_rows);
  };

  std::vector<double> sum(static_cast<size_t>(height * width), 0.0);
  std::vector<int64_t> count(sum.size(), 0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* series = carpet.data() + r * volumes;
    double mean = 0, m2 = 0;
    int64_t n = 0;
    for (int64_t t = 0; t < volumes; ++t) {
      if (!std::isfinite(series[t])) continue;
      ++n;
      const double d = series[t] - mean;
      mean += d / static_cast<double>(n);
      m2 += d * (series[t] - mean);
    }
    const double sd = n > 0 ? std::sqrt(m2 / static_cast<double>(n)) : 0.0;
    const double scale = sd > 0 && std::isfinite(sd) ? 1.0 / sd : 0.0;
    const int64_t y = pixel_row(r);
    for (int64_t t = 0; t < volumes; ++t) {
      if (!std::isfinite(series[t])) continue;
      const auto i = static_cast<size_t>(y * width + bin_of(t, volumes, width));
      sum[i] += (series[t] - mean) * scale;
      ++count[i];
    }
  }

  CarpetImage out;
  out.image = blank(static_cast<int>(width), static_cast<int>(height), kSplit);
  for (int64_t y = 0; y < height; ++y) {
    if (has_split && y == top_rows) continue;
    for (int64_t x = 0; x < width; ++x) {
      const auto i = static_cast<size_t>(y * width + x);
      const double z = count[i] > 0 ? std::clamp(sum[i] / static_cast<double>(count[i]), -2.0, 2.0) : 0.0;
      const auto g = static_cast<uint8_t>(std::lround((z + 2.0) / 4.0 * 255.0));
      put(out.image, static_cast<int>(x), static_cast<int>(y), {g, g, g});
    }
  }
  out.volumes_per_pixel = ceil_div(volumes, width);
  out.rows_per_pixel = has_split ? std::max(ceil_div(split, top_rows), ceil_div(rows - split, data_rows - top_rows))
                                 : ceil_div(rows, data_rows);
  out.split_pixel_row = has_split ? static_cast<int>(top_rows) : -1;
  return out;
}

TracePlot trace_plot(std::span<const double> values, double threshold, int width, int height) {
  TracePlot out;
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (!(lo <= hi)) return out;  // no finite value
  if (std::isfinite(threshold)) {
    lo = std::min(lo, threshold);
    hi = std::max(hi, threshold);
  }
  if (hi - lo <= 1e-12 * std::max(std::abs(lo), std::abs(hi))) {
    const double d = lo == 0 ? 1.0 : 0.1 * std::abs(lo);
    lo -= d;
    hi += d;
  }
  out.y_step = nice_step(hi - lo, 4);
  out.y_min = std::floor(lo / out.y_step) * out.y_step;
  out.y_max = std::ceil(hi / out.y_step) * out.y_step;
  const auto n = static_cast<int64_t>(values.size());
  out.x_step = n > 1 ? std::max<int64_t>(1, static_cast<int64_t>(nice_step(static_cast<double>(n - 1), 8))) : 1;

  RgbImage& img = out.image = blank(width, height, kWhite);
  const int left = kTracePad, right = width - 1 - kTracePad, top = kTracePad, bottom = height - 1 - kTracePad;
  auto px = [&](int64_t i) {
    return n > 1 ? left + static_cast<int>(std::lround(static_cast<double>(i) * (right - left) / (n - 1)))
                 : (left + right) / 2;
  };
  auto py = [&](double v) {
    return top + static_cast<int>(std::lround((out.y_max - v) / (out.y_max - out.y_min) * (bottom - top)));
  };
  const auto y_ticks = static_cast<int64_t>(std::llround((out.y_max - out.y_min) / out.y_step));
  for (int64_t k = 0; k <= y_ticks; ++k) {
    const int y = py(out.y_min + static_cast<double>(k) * out.y_step);
    for (int x = left; x <= right; ++x) put(img, x, y, kGrid);
    for (int x = 0; x < left + 5; ++x) put(img, x, y, kTick);
  }
  for (int64_t i = 0; i < n; i += out.x_step) {
    const int x = px(i);
    for (int y = top; y <= bottom; ++y) put(img, x, y, kGrid);
    for (int y = bottom - 5; y < height; ++y) put(img, x, y, kTick);
  }
  if (std::isfinite(threshold)) {
    const int y = py(threshold);
    for (int x = left; x <= right; ++x) {
      if ((x - left) % 10 < 6) {
        put(img, x, y, kThreshold);
        put(img, x, y + 1, kThreshold);
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(values[static_cast<size_t>(i)])) continue;
    const int x = px(i), y = py(values[static_cast<size_t>(i)]);
    const bool next = i + 1 < n && std::isfinite(values[static_cast<size_t>(i + 1)]);
    const bool previous = i > 0 && std::isfinite(values[static_cast<size_t>(i - 1)]);
    if (next) line(img, x, y, px(i + 1), py(values[static_cast<size_t>(i + 1)]), kLine);
    if (!next && !previous) {
      for (int dy = -2; dy <= 2; ++dy) {
        for (int dx = -2; dx <= 2; ++dx) put(img, x + dx, y + dy, kLine);
      }
    }
  }
  return out;
}

MosaicImage tsnr_mosaic(std::array<int64_t, 3> dims, std::span<const float> tsnr, std::span<const uint8_t> mask) {
  const auto [nx, ny, nz] = dims;
  if (nx < 1 || ny < 1 || nz < 1 || tsnr.size() != static_cast<size_t>(nx * ny * nz) ||
      (!mask.empty() && mask.size() != tsnr.size())) {
    throw std::invalid_argument("tsnr_mosaic: the map or the mask does not match the grid");
  }
  auto inside = [&](size_t i) { return mask.empty() || mask[i] != 0; };
  std::vector<float> kept;
  for (size_t i = 0; i < tsnr.size(); ++i) {
    if (inside(i) && std::isfinite(tsnr[i])) kept.push_back(tsnr[i]);
  }
  MosaicImage out;
  if (!kept.empty()) {
    const auto rank = static_cast<size_t>(std::llround(0.99 * static_cast<double>(kept.size() - 1)));  // nearest rank
    std::nth_element(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(rank), kept.end());
    out.range_max = kept[rank];
    if (!(out.range_max > 0)) out.range_max = static_cast<double>(*std::max_element(kept.begin(), kept.end()));
  }
  if (!(out.range_max > 0)) out.range_max = 1;

  constexpr int64_t kPixelBudget = 1'500'000;
  out.in_plane_step = std::max<int64_t>(1, ceil_div(std::max(nx, ny), 256));
  const int64_t s = out.in_plane_step, tw = ceil_div(nx, s), th = ceil_div(ny, s);
  out.slice_step = std::max<int64_t>(1, ceil_div(nz * tw * th, kPixelBudget));
  out.slices_shown = ceil_div(nz, out.slice_step);
  out.columns = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(out.slices_shown * th) / static_cast<double>(tw)))),
      1, out.slices_shown);
  const int64_t tile_rows = ceil_div(out.slices_shown, out.columns);
  out.image = blank(static_cast<int>(out.columns * (tw + 1) - 1), static_cast<int>(tile_rows * (th + 1) - 1), kGap);
  for (int64_t k = 0; k < out.slices_shown; ++k) {
    const int64_t z = k * out.slice_step;
    const int64_t x0 = (k % out.columns) * (tw + 1), y0 = (k / out.columns) * (th + 1);
    for (int64_t by = 0; by < th; ++by) {
      for (int64_t bx = 0; bx < tw; ++bx) {
        double sum = 0;
        int64_t finite = 0, in_mask = 0;
        for (int64_t y = by * s; y < std::min(ny, (by + 1) * s); ++y) {
          for (int64_t x = bx * s; x < std::min(nx, (bx + 1) * s); ++x) {
            const auto i = static_cast<size_t>((z * ny + y) * nx + x);
            if (!inside(i)) continue;
            ++in_mask;
            if (std::isfinite(tsnr[i])) {
              sum += tsnr[i];
              ++finite;
            }
          }
        }
        const Rgb c = in_mask == 0  ? kOutside
                      : finite == 0 ? kNonFinite
                                    : viridis(sum / static_cast<double>(finite) / out.range_max);
        put(out.image, static_cast<int>(x0 + bx), static_cast<int>(y0 + th - 1 - by), c);
      }
    }
  }
  return out;
}

}  // namespace rtf
