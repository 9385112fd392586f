// Small plotting widgets drawn with ImGui's draw list (no plotting library): line plots with a shared x axis,
// stacked bars, a histogram, a heat map and a colour bar. Each reserves its rectangle as an ImGui item and returns it
// (screen pixels), so that the caller can record the layout or handle clicks and hovering.
#pragma once

#include <imgui.h>

#include <string>
#include <vector>

namespace rtf::viewer {

struct Series {
  std::string label;
  std::vector<double> x, y;  // NaN y values break the line
  ImU32 colour = IM_COL32(255, 255, 255, 255);
  float thickness = 1.5f;
};

struct PlotOptions {
  double y_min = 0.0, y_max = 0.0;       // equal: from the data
  std::vector<double> horizontal_lines;  // e.g. a threshold, drawn dashed
  double x_marker = -1.0;                // a vertical line at this x (< 0: none)
  bool legend = true;
  double x_min = 0.0, x_max = 0.0;  // equal: from the data (several plots with one x axis set both)
  std::vector<double> x_markers;    // thin vertical lines at these x (e.g. the volumes of flagged slices)
  ImU32 x_markers_colour = IM_COL32(255, 150, 40, 200);
};

struct PlotRect {
  ImVec2 min, max;
};

PlotRect line_plot(const char* id, const std::vector<Series>& series, ImVec2 size, const PlotOptions& options = {});

// Bars at x = 0..n-1, each split into stacked segments (values[bar][segment]), coloured by segment.
PlotRect stacked_bars(const char* id, const std::vector<std::vector<double>>& values, const std::vector<ImU32>& colours,
                      ImVec2 size);

PlotRect histogram(const char* id, const std::vector<double>& values, int bins, ImVec2 size, ImU32 colour);

// R x R values (row-major) coloured blue-white-red over [-1, 1]; sets `hovered` to (row, column) or (-1, -1).
PlotRect heat_map(const char* id, const std::vector<float>& values, int rows, ImVec2 size, int& hovered_row,
                  int& hovered_column);

// A vertical colour bar of the overlay's colours with its range labels.
PlotRect colour_bar(const char* id, float threshold, float maximum, bool positive, bool negative, ImVec2 size);

// A vertical colour bar of the hot colours from `low` (bottom) to `high` (top), labelled at both ends.
PlotRect colour_scale(const char* id, float low, float high, ImVec2 size);

// A vertical colour bar of a signed map's colours: the hot colours from 0 (middle) to +maximum (top), the cool ones
// from 0 to -maximum (bottom), labelled at both ends and in the middle.
PlotRect signed_scale(const char* id, float maximum, ImVec2 size);

}  // namespace rtf::viewer
