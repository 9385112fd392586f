// The plotting widgets: axes with min/max labels, polylines, bars, heat map cells.
#include "viewer/plot_widgets.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "viewer/slice_image.hpp"

namespace rtf::viewer {

namespace {

constexpr ImU32 kFrame = IM_COL32(90, 90, 90, 255);
constexpr ImU32 kBackground = IM_COL32(20, 20, 24, 255);
constexpr ImU32 kText = IM_COL32(200, 200, 200, 255);

PlotRect reserve(const char* id, ImVec2 size) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(id, size);
  return {p, ImVec2(p.x + size.x, p.y + size.y)};
}

}  // namespace

PlotRect line_plot(const char* id, const std::vector<Series>& series, ImVec2 size, const PlotOptions& options) {
  const PlotRect r = reserve(id, size);
  ImDrawList* d = ImGui::GetWindowDrawList();
  d->AddRectFilled(r.min, r.max, kBackground);
  d->AddRect(r.min, r.max, kFrame);
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const Series& s : series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, s.y[i]);
      y1 = std::max(y1, s.y[i]);
    }
  }
  for (double h : options.horizontal_lines) {
    if (!std::isfinite(h)) continue;
    y0 = std::min(y0, h);
    y1 = std::max(y1, h);
  }
  if (options.y_max > options.y_min) {
    y0 = options.y_min;
    y1 = options.y_max;
  }
  if (!std::isfinite(x0)) {
    d->AddText(ImVec2(r.min.x + 6, r.min.y + 4), kText, "waiting for data");
    return r;
  }
  if (options.x_max > options.x_min) {
    x0 = options.x_min;
    x1 = options.x_max;
  }
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) {
    y0 -= 0.5;
    y1 += 0.5;
  }
  const double pad = 0.05 * (y1 - y0);
  y0 -= pad;
  y1 += pad;
  const float left = r.min.x + 4, right = r.max.x - 4, top = r.min.y + 4, bottom = r.max.y - 4;
  auto px = [&](double x) { return left + static_cast<float>((x - x0) / (x1 - x0)) * (right - left); };
  auto py = [&](double y) { return bottom - static_cast<float>((y - y0) / (y1 - y0)) * (bottom - top); };
  if (y0 < 0 && y1 > 0) d->AddLine(ImVec2(left, py(0)), ImVec2(right, py(0)), IM_COL32(70, 70, 70, 255));
  for (double h : options.horizontal_lines) {
    if (!std::isfinite(h)) continue;
    const int dashes = static_cast<int>((right - left) / 8) + 1;
    for (int k = 0; k < dashes; ++k) {
      const float x = left + 8.0f * static_cast<float>(k);
      d->AddLine(ImVec2(x, py(h)), ImVec2(std::min(x + 4, right), py(h)), IM_COL32(230, 60, 60, 255), 1.5f);
    }
  }
  for (double x : options.x_markers) {
    if (x >= x0 && x <= x1) d->AddLine(ImVec2(px(x), top), ImVec2(px(x), bottom), options.x_markers_colour);
  }
  if (options.x_marker >= 0) {
    d->AddLine(ImVec2(px(options.x_marker), top), ImVec2(px(options.x_marker), bottom), IM_COL32(240, 240, 120, 200));
  }
  d->PushClipRect(r.min, r.max, true);
  for (const Series& s : series) {
    std::vector<ImVec2> run;
    auto flush = [&] {
      if (run.size() >= 2) d->AddPolyline(run.data(), static_cast<int>(run.size()), s.colour, 0, s.thickness);
      if (run.size() == 1) d->AddCircleFilled(run[0], s.thickness + 1, s.colour);
      run.clear();
    };
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i])) {
        flush();
        continue;
      }
      run.emplace_back(px(s.x[i]), py(s.y[i]));
    }
    flush();
  }
  d->PopClipRect();
  char text[64];
  std::snprintf(text, sizeof text, "%.3g", y1);
  d->AddText(ImVec2(r.min.x + 3, r.min.y + 1), kText, text);
  const float top_label_width = ImGui::CalcTextSize(text).x;
  std::snprintf(text, sizeof text, "%.3g", y0);
  d->AddText(ImVec2(r.min.x + 3, r.max.y - 15), kText, text);
  if (options.legend) {
    float x = r.min.x + std::max(60.0f, top_label_width + 12);  // after the top label (1.34e+03 is wide)
    for (const Series& s : series) {
      if (s.label.empty()) continue;
      d->AddRectFilled(ImVec2(x, r.min.y + 5), ImVec2(x + 10, r.min.y + 13), s.colour);
      d->AddText(ImVec2(x + 13, r.min.y + 1), kText, s.label.c_str());
      x += 20 + ImGui::CalcTextSize(s.label.c_str()).x;
    }
  }
  return r;
}

PlotRect stacked_bars(const char* id, const std::vector<std::vector<double>>& values, const std::vector<ImU32>& colours,
                      ImVec2 size) {
  const PlotRect r = reserve(id, size);
  ImDrawList* d = ImGui::GetWindowDrawList();
  d->AddRectFilled(r.min, r.max, kBackground);
  d->AddRect(r.min, r.max, kFrame);
  if (values.empty()) {
    d->AddText(ImVec2(r.min.x + 6, r.min.y + 4), kText, "waiting for data");
    return r;
  }
  std::vector<double> totals;
  for (const auto& bar : values) {
    double t = 0;
    for (double v : bar) t += std::isfinite(v) && v > 0 ? v : 0.0;
    totals.push_back(t);
  }
  std::vector<double> sorted = totals;
  std::sort(sorted.begin(), sorted.end());
  // Scale to the 95th percentile so that one slow TR does not flatten the rest (it is clipped, drawn to the top).
  const double top_value = std::max(sorted[static_cast<size_t>(0.95 * static_cast<double>(sorted.size() - 1))], 1e-3);
  const float left = r.min.x + 2, right = r.max.x - 2, bottom = r.max.y - 2, height = r.max.y - r.min.y - 18;
  const float w = (right - left) / static_cast<float>(values.size());
  for (size_t b = 0; b < values.size(); ++b) {
    double acc = 0;
    for (size_t s = 0; s < values[b].size(); ++s) {
      const double v = std::isfinite(values[b][s]) && values[b][s] > 0 ? values[b][s] : 0.0;
      const float y_lo = bottom - static_cast<float>(std::min(acc / top_value, 1.0)) * height;
      acc += v;
      const float y_hi = bottom - static_cast<float>(std::min(acc / top_value, 1.0)) * height;
      if (y_lo - y_hi >= 0.5f) {
        d->AddRectFilled(ImVec2(left + w * static_cast<float>(b), y_hi),
                         ImVec2(left + w * static_cast<float>(b + 1) - (w > 3 ? 1.0f : 0.0f), y_lo),
                         colours[s % colours.size()]);
      }
    }
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.3g ms", top_value);
  d->AddText(ImVec2(r.min.x + 3, r.min.y + 1), kText, text);
  return r;
}

PlotRect histogram(const char* id, const std::vector<double>& values, int bins, ImVec2 size, ImU32 colour) {
  const PlotRect r = reserve(id, size);
  ImDrawList* d = ImGui::GetWindowDrawList();
  d->AddRectFilled(r.min, r.max, kBackground);
  d->AddRect(r.min, r.max, kFrame);
  std::vector<double> v;
  for (double x : values) {
    if (std::isfinite(x)) v.push_back(x);
  }
  if (v.empty() || bins < 1) {
    d->AddText(ImVec2(r.min.x + 6, r.min.y + 4), kText, "waiting for data");
    return r;
  }
  std::sort(v.begin(), v.end());
  const double lo = v.front(),
               hi = std::max(v[static_cast<size_t>(0.99 * static_cast<double>(v.size() - 1))], lo + 1e-3);
  std::vector<int> count(static_cast<size_t>(bins), 0);
  for (double x : v) {
    const int b = std::clamp(static_cast<int>((x - lo) / (hi - lo) * bins), 0, bins - 1);
    ++count[static_cast<size_t>(b)];
  }
  const int most = *std::max_element(count.begin(), count.end());
  const float left = r.min.x + 2, right = r.max.x - 2, bottom = r.max.y - 16, height = r.max.y - r.min.y - 34;
  const float w = (right - left) / static_cast<float>(bins);
  for (int b = 0; b < bins; ++b) {
    const float h = height * static_cast<float>(count[static_cast<size_t>(b)]) / static_cast<float>(most);
    d->AddRectFilled(ImVec2(left + w * static_cast<float>(b), bottom - h),
                     ImVec2(left + w * static_cast<float>(b + 1) - 1, bottom), colour);
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.3g", lo);
  d->AddText(ImVec2(left, r.max.y - 15), kText, text);
  std::snprintf(text, sizeof text, "%.3g ms", hi);
  d->AddText(ImVec2(right - ImGui::CalcTextSize(text).x, r.max.y - 15), kText, text);
  return r;
}

PlotRect heat_map(const char* id, const std::vector<float>& values, int rows, ImVec2 size, int& hovered_row,
                  int& hovered_column) {
  const PlotRect r = reserve(id, size);
  hovered_row = hovered_column = -1;
  ImDrawList* d = ImGui::GetWindowDrawList();
  d->AddRectFilled(r.min, r.max, kBackground);
  if (rows < 1 || values.size() != static_cast<size_t>(rows) * static_cast<size_t>(rows)) {
    d->AddText(ImVec2(r.min.x + 6, r.min.y + 4), kText, "no connectivity matrix");
    return r;
  }
  const float cell = std::min(r.max.x - r.min.x, r.max.y - r.min.y) / static_cast<float>(rows);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < rows; ++j) {
      const auto c =
          diverging_colour(values[static_cast<size_t>(i) * static_cast<size_t>(rows) + static_cast<size_t>(j)]);
      const ImVec2 a(r.min.x + cell * static_cast<float>(j), r.min.y + cell * static_cast<float>(i));
      d->AddRectFilled(a, ImVec2(a.x + cell, a.y + cell), IM_COL32(c[0], c[1], c[2], 255));
    }
  }
  if (ImGui::IsItemHovered()) {
    const ImVec2 m = ImGui::GetMousePos();
    const int j = static_cast<int>((m.x - r.min.x) / cell), i = static_cast<int>((m.y - r.min.y) / cell);
    if (i >= 0 && i < rows && j >= 0 && j < rows) {
      hovered_row = i;
      hovered_column = j;
    }
  }
  return r;
}

PlotRect colour_bar(const char* id, float threshold, float maximum, bool positive, bool negative, ImVec2 size) {
  const PlotRect r = reserve(id, size);
  ImDrawList* d = ImGui::GetWindowDrawList();
  const float mid = (r.min.y + r.max.y) / 2;
  const int steps = 32;
  for (int k = 0; k < steps; ++k) {
    const float t = static_cast<float>(k) / (steps - 1);
    const float h = (mid - r.min.y - 14) / steps;
    if (positive) {
      const auto c = hot_colour(t);
      d->AddRectFilled(ImVec2(r.min.x, mid - h * static_cast<float>(k + 1)),
                       ImVec2(r.min.x + 14, mid - h * static_cast<float>(k)), IM_COL32(c[0], c[1], c[2], 255));
    }
    if (negative) {
      const auto c = cool_colour(t);
      d->AddRectFilled(ImVec2(r.min.x, mid + h * static_cast<float>(k)),
                       ImVec2(r.min.x + 14, mid + h * static_cast<float>(k + 1)), IM_COL32(c[0], c[1], c[2], 255));
    }
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", maximum);
  d->AddText(ImVec2(r.min.x + 16, r.min.y), kText, text);
  std::snprintf(text, sizeof text, "%.1f", threshold);
  d->AddText(ImVec2(r.min.x + 16, mid - 16), kText, text);
  std::snprintf(text, sizeof text, "-%.1f", threshold);
  d->AddText(ImVec2(r.min.x + 16, mid + 2), kText, text);
  std::snprintf(text, sizeof text, "-%.1f", maximum);
  d->AddText(ImVec2(r.min.x + 16, r.max.y - 14), kText, text);
  return r;
}

PlotRect colour_scale(const char* id, float low, float high, ImVec2 size) {
  const PlotRect r = reserve(id, size);
  ImDrawList* d = ImGui::GetWindowDrawList();
  const int steps = 32;
  const float top = r.min.y + 8, bottom = r.max.y - 8, h = (bottom - top) / steps;
  for (int k = 0; k < steps; ++k) {
    const auto c = hot_colour(static_cast<float>(k) / (steps - 1));
    d->AddRectFilled(ImVec2(r.min.x, bottom - h * static_cast<float>(k + 1)),
                     ImVec2(r.min.x + 14, bottom - h * static_cast<float>(k)), IM_COL32(c[0], c[1], c[2], 255));
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", high);
  d->AddText(ImVec2(r.min.x + 16, top - 8), kText, text);
  std::snprintf(text, sizeof text, "%.3g", low);
  d->AddText(ImVec2(r.min.x + 16, bottom - 8), kText, text);
  return r;
}

PlotRect signed_scale(const char* id, float maximum, ImVec2 size) {
  const PlotRect r = reserve(id, size);
  ImDrawList* d = ImGui::GetWindowDrawList();
  const int steps = 32;
  const float top = r.min.y + 8, bottom = r.max.y - 8, mid = (top + bottom) / 2, h = (mid - top) / steps;
  for (int k = 0; k < steps; ++k) {
    const float t = static_cast<float>(k) / (steps - 1);
    const auto hot = hot_colour(t), cool = cool_colour(t);
    d->AddRectFilled(ImVec2(r.min.x, mid - h * static_cast<float>(k + 1)),
                     ImVec2(r.min.x + 14, mid - h * static_cast<float>(k)), IM_COL32(hot[0], hot[1], hot[2], 255));
    d->AddRectFilled(ImVec2(r.min.x, mid + h * static_cast<float>(k)),
                     ImVec2(r.min.x + 14, mid + h * static_cast<float>(k + 1)),
                     IM_COL32(cool[0], cool[1], cool[2], 255));
  }
  char text[32];
  const char* spec = std::fabs(maximum) < 1e4f ? "%.3g" : "%.0e";  // -4e+04 fits beside the bar, -4.45e+04 not
  std::snprintf(text, sizeof text, spec, static_cast<double>(maximum));
  d->AddText(ImVec2(r.min.x + 16, top - 8), kText, text);
  d->AddText(ImVec2(r.min.x + 16, mid - 8), kText, "0");
  std::snprintf(text, sizeof text, spec, -static_cast<double>(maximum));
  d->AddText(ImVec2(r.min.x + 16, bottom - 8), kText, text);
  return r;
}

}  // namespace rtf::viewer
