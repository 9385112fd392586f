// run_viewer: window and GL set-up, the per-frame refresh from SharedViewerData, the panels, the snapshot.
#include "viewer/viewer_app.hpp"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "viewer/panel_support.hpp"
#include "viewer/plot_widgets.hpp"
#include "viewer/png_writer.hpp"
#include "viewer/qa_panel.hpp"
#include "viewer/slice_image.hpp"

namespace rtf::viewer {

namespace {

constexpr std::array<ImU32, 6> kMotionColours{IM_COL32(240, 80, 80, 255),  IM_COL32(80, 220, 80, 255),
                                              IM_COL32(90, 140, 255, 255), IM_COL32(240, 160, 60, 255),
                                              IM_COL32(200, 90, 230, 255), IM_COL32(60, 210, 210, 255)};
constexpr const char* kMapNames[] = {"t (cumulative GLM)", "t (sliding GLM)", "CCA", "seed correlation (z)", "none"};

class App {
 public:
  App(SharedViewerData& shared, ViewerOptions& options) : shared_(shared), options_(options) {}

  // One frame of panels; returns true when the data changed since the last frame.
  void frame(int width, int height);
  const ViewerData& data() const { return data_; }
  const Layout& layout() const { return layout_; }
  int64_t shown_trs() const { return static_cast<int64_t>(data_.history.size()); }
  int64_t outline_pixels() const { return outline_pixels_; }

 private:
  void refresh();
  void move_to_peak();
  void move_to_roi();
  void rebuild_slices();
  void slices_panel(ImVec2 pos, ImVec2 size);
  void motion_panel(ImVec2 pos, ImVec2 size);
  void feedback_panel(ImVec2 pos, ImVec2 size);
  void connectivity_panel(ImVec2 pos, ImVec2 size);
  void latency_panel(ImVec2 pos, ImVec2 size);
  void status_panel(ImVec2 pos, ImVec2 size);
  void qa_panel(ImVec2 pos, ImVec2 size);
  const std::vector<float>& underlay() const;
  const std::vector<float>& overlay_map() const;
  bool begin_panel(const char* name, ImVec2 pos, ImVec2 size);

  SharedViewerData& shared_;
  ViewerOptions& options_;
  ViewerData data_;
  Layout layout_;
  std::array<Texture, 3> slices_;
  std::array<int64_t, 3> cursor_{-1, -1, -1};
  bool slices_dirty_ = true;
  int map_choice_ = 0;
  OverlaySettings overlay_;
  std::pair<float, float> window_{0.0f, 1.0f};
  float fd_threshold_ = 0.5f;
  bool brain_only_ = true;  // no overlay where the underlay is darker than 15% of its window's top (background)
  int replay_index_ = 0;
  std::vector<std::pair<int64_t, float>> voxel_series_;
  int64_t outline_pixels_ = 0;     // ROI outline pixels in the three slices last drawn
  int64_t roi_version_seen_ = -1;  // --goto-roi: the labels the crosshair went to
  QaPanel qa_panel_;
};

const std::vector<float>& App::underlay() const {
  if (options_.replay && !options_.replay_volumes.empty() && !data_.history.empty()) {
    const auto tr =
        static_cast<size_t>(std::clamp<int64_t>(replay_index_, 0, static_cast<int64_t>(data_.history.size()) - 1));
    const int64_t volume = data_.history[tr].volume;
    const auto i =
        static_cast<size_t>(std::clamp<int64_t>(volume, 0, static_cast<int64_t>(options_.replay_volumes.size()) - 1));
    return options_.replay_volumes[i];
  }
  return data_.volume;
}

const std::vector<float>& App::overlay_map() const {
  static const std::vector<float> kNone;
  switch (map_choice_) {
    case 0:
      return data_.t_map;
    case 1:
      return data_.sliding_t_map;
    case 2:
      return data_.cca_map;
    case 3:
      return data_.seed_map;
    default:
      return kNone;
  }
}

void App::refresh() {
  const bool first = data_.messages == 0;
  if (!shared_.refresh(data_)) return;
  if (cursor_[0] < 0 || cursor_[0] >= data_.dims[0] || cursor_[1] >= data_.dims[1] || cursor_[2] >= data_.dims[2]) {
    cursor_ = {data_.dims[0] / 2, data_.dims[1] / 2, data_.dims[2] / 2};
  }
  if (first || data_.history.size() < 3) window_ = robust_range(underlay());
  if (options_.follow_peak) move_to_peak();
  if (options_.goto_roi && !data_.roi_labels.empty() && data_.roi_labels_version != roi_version_seen_) {
    roi_version_seen_ = data_.roi_labels_version;
    move_to_roi();
  }
  if (options_.replay) replay_index_ = std::max<int>(0, static_cast<int>(data_.history.size()) - 1);
  slices_dirty_ = true;
}

void App::move_to_peak() {
  const std::vector<float>& map = overlay_map();
  if (map.empty() || static_cast<int64_t>(map.size()) != data_.voxels()) return;
  int64_t best = -1;
  for (size_t i = 0; i < map.size(); ++i) {
    if (std::isfinite(map[i]) && (best < 0 || map[i] > map[static_cast<size_t>(best)])) best = static_cast<int64_t>(i);
  }
  if (best < 0) return;
  cursor_ = {best % data_.dims[0], (best / data_.dims[0]) % data_.dims[1], best / (data_.dims[0] * data_.dims[1])};
  slices_dirty_ = true;
}

void App::move_to_roi() {
  const auto c = roi_centre(data_.roi_labels, data_.dims, 0);
  if (c[0] < 0) return;
  cursor_ = c;
  options_.follow_peak = false;
  slices_dirty_ = true;
}

void App::rebuild_slices() {
  if (data_.voxels() <= 0) return;
  overlay_.min_underlay = brain_only_ ? 0.15f * window_.second : -std::numeric_limits<float>::infinity();
  const Plane planes[3] = {Plane::kAxial, Plane::kCoronal, Plane::kSagittal};
  outline_pixels_ = 0;
  for (int k = 0; k < 3; ++k) {
    SliceImage image =
        render_slice(underlay(), overlay_map(), data_.dims, data_.voxel_mm(), planes[k], cursor_, window_, overlay_);
    if (options_.roi_outlines) {
      outline_pixels_ += draw_roi_outlines(image, data_.roi_labels, data_.dims, planes[k], cursor_);
    }
    slices_[static_cast<size_t>(k)].upload(image);
  }
  const int64_t index = cursor_[0] + data_.dims[0] * (cursor_[1] + data_.dims[1] * cursor_[2]);
  if (options_.replay) {
    voxel_series_.clear();
    for (size_t t = 0; t < options_.replay_volumes.size(); ++t) {
      if (static_cast<size_t>(index) < options_.replay_volumes[t].size()) {
        voxel_series_.emplace_back(static_cast<int64_t>(t), options_.replay_volumes[t][static_cast<size_t>(index)]);
      }
    }
  } else {
    voxel_series_ = shared_.voxel_series(index);
  }
  slices_dirty_ = false;
}

bool App::begin_panel(const char* name, ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  const bool open = ImGui::Begin(name, nullptr,
                                 ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse |
                                     ImGuiWindowFlags_NoSavedSettings);
  layout_.add_window(std::string("panel:") + name);
  return open;
}

void App::slices_panel(ImVec2 pos, ImVec2 size) {
  if (begin_panel("Slices", pos, size)) {
    ImGui::SetNextItemWidth(170);
    if (ImGui::Combo("map", &map_choice_, kMapNames, IM_ARRAYSIZE(kMapNames))) {
      slices_dirty_ = true;
      if (options_.follow_peak) move_to_peak();
    }
    ImGui::SameLine();
    ImGui::SetNextItemWidth(130);
    if (ImGui::SliderFloat("threshold", &overlay_.threshold, 0.0f, 10.0f, "%.2f")) slices_dirty_ = true;
    ImGui::SameLine();
    if (ImGui::Checkbox("+", &overlay_.positive)) slices_dirty_ = true;
    ImGui::SameLine();
    if (ImGui::Checkbox("-", &overlay_.negative)) slices_dirty_ = true;
    ImGui::SameLine();
    ImGui::SetNextItemWidth(100);
    if (ImGui::SliderFloat("max", &overlay_.maximum, overlay_.threshold + 0.1f, 20.0f, "%.1f")) slices_dirty_ = true;
    if (ImGui::Checkbox("follow peak", &options_.follow_peak) && options_.follow_peak) move_to_peak();
    ImGui::SameLine();
    if (ImGui::Checkbox("brain only", &brain_only_)) slices_dirty_ = true;
    ImGui::SameLine();
    if (ImGui::Checkbox("ROI outlines", &options_.roi_outlines)) slices_dirty_ = true;
    if (!data_.roi_labels.empty()) {
      ImGui::SameLine();
      if (ImGui::Button("go to ROI")) move_to_roi();
    }
    if (options_.replay && !data_.history.empty()) {
      ImGui::SameLine();
      ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - 40);
      if (ImGui::SliderInt("TR", &replay_index_, 0, static_cast<int>(data_.history.size()) - 1)) slices_dirty_ = true;
    }
    if (slices_dirty_) rebuild_slices();
    const float avail = ImGui::GetContentRegionAvail().x - 70;
    const Plane planes[3] = {Plane::kAxial, Plane::kCoronal, Plane::kSagittal};
    const char* names[3] = {"slice:axial", "slice:coronal", "slice:sagittal"};
    float image_height = 0;
    for (int k = 0; k < 3; ++k) {
      Texture& t = slices_[static_cast<size_t>(k)];
      if (t.id == 0) {
        ImGui::TextUnformatted("waiting for the first volume");
        break;
      }
      const float w = avail / 3 - 6;
      const float h = w * static_cast<float>(t.height) / (static_cast<float>(t.width) * static_cast<float>(t.aspect));
      image_height = std::max(image_height, h);
      ImGui::Image(t.imgui_id(), ImVec2(w, h));
      const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
      layout_.add(names[k], {a, b});
      // Crosshair.
      const auto to_screen = [&](double px, double py) {
        return ImVec2(a.x + static_cast<float>((px + 0.5) / t.width) * (b.x - a.x),
                      a.y + static_cast<float>((py + 0.5) / t.height) * (b.y - a.y));
      };
      double cx = 0, cy = 0;
      switch (planes[k]) {
        case Plane::kAxial:
          cx = static_cast<double>(cursor_[0]);
          cy = static_cast<double>(data_.dims[1] - 1 - cursor_[1]);
          break;
        case Plane::kCoronal:
          cx = static_cast<double>(cursor_[0]);
          cy = static_cast<double>(data_.dims[2] - 1 - cursor_[2]);
          break;
        case Plane::kSagittal:
          cx = static_cast<double>(cursor_[1]);
          cy = static_cast<double>(data_.dims[2] - 1 - cursor_[2]);
          break;
      }
      const ImVec2 c = to_screen(cx, cy);
      ImDrawList* d = ImGui::GetWindowDrawList();
      d->AddLine(ImVec2(a.x, c.y), ImVec2(b.x, c.y), IM_COL32(80, 255, 80, 120));
      d->AddLine(ImVec2(c.x, a.y), ImVec2(c.x, b.y), IM_COL32(80, 255, 80, 120));
      if (ImGui::IsItemClicked()) {
        const ImVec2 m = ImGui::GetMousePos();
        const int px =
            std::clamp(static_cast<int>((m.x - a.x) / (b.x - a.x) * static_cast<float>(t.width)), 0, t.width - 1);
        const int py =
            std::clamp(static_cast<int>((m.y - a.y) / (b.y - a.y) * static_cast<float>(t.height)), 0, t.height - 1);
        cursor_ = slice_pixel_to_voxel(planes[k], data_.dims, cursor_, px, py);
        options_.follow_peak = false;
        slices_dirty_ = true;
      }
      ImGui::SameLine();
    }
    layout_.add("colour_bar", colour_bar("##colourbar", overlay_.threshold, overlay_.maximum, overlay_.positive,
                                         overlay_.negative, ImVec2(60, std::max(image_height, 120.0f))));
    const int64_t index = cursor_[0] + data_.dims[0] * (cursor_[1] + data_.dims[1] * cursor_[2]);
    const std::vector<float>& map = overlay_map();
    const double map_value =
        index >= 0 && static_cast<size_t>(index) < map.size() ? map[static_cast<size_t>(index)] : kNaN;
    ImGui::Text("voxel (%lld, %lld, %lld)  %s = %.2f   run %s, contrast %s", static_cast<long long>(cursor_[0]),
                static_cast<long long>(cursor_[1]), static_cast<long long>(cursor_[2]), kMapNames[map_choice_],
                map_value, data_.run.c_str(), data_.contrast.empty() ? "-" : data_.contrast.c_str());
    Series s{"voxel time series", {}, {}, IM_COL32(230, 230, 230, 255), 1.5f};
    for (const auto& [v, y] : voxel_series_) {
      s.x.push_back(static_cast<double>(v));
      s.y.push_back(y);
    }
    PlotOptions o;
    if (options_.replay && !data_.history.empty())
      o.x_marker = static_cast<double>(data_.history[static_cast<size_t>(replay_index_)].volume);
    layout_.add(
        "plot:voxel",
        line_plot("##voxel", {s},
                  ImVec2(ImGui::GetContentRegionAvail().x, std::max(ImGui::GetContentRegionAvail().y - 4, 60.0f)), o));
  }
  ImGui::End();
}

void App::motion_panel(ImVec2 pos, ImVec2 size) {
  if (begin_panel("Motion", pos, size)) {
    std::vector<Series> translations, rotations;
    const char* labels[6] = {"x mm", "y mm", "z mm", "pitch deg", "roll deg", "yaw deg"};
    for (int k = 0; k < 6; ++k) {
      Series s{labels[k], {}, {}, kMotionColours[static_cast<size_t>(k)], 1.5f};
      for (const TrSample& t : data_.history) {
        s.x.push_back(static_cast<double>(t.volume));
        s.y.push_back(t.motion[static_cast<size_t>(k)]);
      }
      (k < 3 ? translations : rotations).push_back(std::move(s));
    }
    Series fd{"FD mm", {}, {}, IM_COL32(250, 250, 250, 255), 1.5f};
    int64_t above = 0;
    for (const TrSample& t : data_.history) {
      fd.x.push_back(static_cast<double>(t.volume));
      fd.y.push_back(t.fd_mm);
      if (std::isfinite(t.fd_mm) && t.fd_mm > fd_threshold_) ++above;
    }
    const float h = (ImGui::GetContentRegionAvail().y - 30) / 3;
    const float w = ImGui::GetContentRegionAvail().x;
    PlotOptions o;
    if (options_.replay && !data_.history.empty())
      o.x_marker = static_cast<double>(data_.history[static_cast<size_t>(replay_index_)].volume);
    layout_.add("plot:translations", line_plot("##trans", translations, ImVec2(w, h), o));
    layout_.add("plot:rotations", line_plot("##rot", rotations, ImVec2(w, h), o));
    PlotOptions fo = o;
    fo.horizontal_lines = {fd_threshold_};
    layout_.add("plot:fd", line_plot("##fd", {fd}, ImVec2(w, h), fo));
    ImGui::SetNextItemWidth(140);
    ImGui::SliderFloat("FD threshold (mm)", &fd_threshold_, 0.1f, 2.0f, "%.2f");
    ImGui::SameLine();
    ImGui::Text("%lld of %zu volumes above", static_cast<long long>(above), data_.history.size());
  }
  ImGui::End();
}

void App::feedback_panel(ImVec2 pos, ImVec2 size) {
  if (begin_panel("Feedback", pos, size)) {
    std::vector<Series> series;
    // The design's regressors behind, scaled into the feedback's range (grey).
    double lo = 0, hi = 0;
    bool any = false;
    for (const TrSample& t : data_.history) {
      if (!std::isfinite(t.feedback)) continue;
      lo = any ? std::min(lo, t.feedback) : t.feedback;
      hi = any ? std::max(hi, t.feedback) : t.feedback;
      any = true;
    }
    if (!any || hi <= lo) {
      lo = -1;
      hi = 1;
    }
    for (size_t c = 0; c < data_.design_columns.size(); ++c) {
      const std::string& name = data_.design_columns[c];
      if (name == "constant" || name.rfind("drift", 0) == 0 || name.rfind("trans", 0) == 0 ||
          name.rfind("rot", 0) == 0) {
        continue;
      }
      Series s{name, {}, {}, IM_COL32(110, 110, 140, 255), 3.0f};
      double dlo = 1e300, dhi = -1e300;
      for (const TrSample& t : data_.history) {
        if (c < t.design_row.size() && std::isfinite(t.design_row[c])) {
          dlo = std::min(dlo, t.design_row[c]);
          dhi = std::max(dhi, t.design_row[c]);
        }
      }
      for (const TrSample& t : data_.history) {
        s.x.push_back(static_cast<double>(t.volume));
        const double v = c < t.design_row.size() ? t.design_row[c] : kNaN;
        s.y.push_back(dhi > dlo ? lo + (v - dlo) / (dhi - dlo) * (hi - lo) : kNaN);
      }
      series.push_back(std::move(s));
      if (series.size() >= 3) break;
    }
    Series fb{"feedback", {}, {}, IM_COL32(255, 210, 60, 255), 2.5f};
    for (const TrSample& t : data_.history) {
      fb.x.push_back(static_cast<double>(t.volume));
      fb.y.push_back(t.feedback);
    }
    series.push_back(fb);
    const float w = ImGui::GetContentRegionAvail().x, h = (ImGui::GetContentRegionAvail().y - 24) / 2;
    PlotOptions o;
    if (options_.replay && !data_.history.empty())
      o.x_marker = static_cast<double>(data_.history[static_cast<size_t>(replay_index_)].volume);
    layout_.add("plot:feedback", line_plot("##feedback", series, ImVec2(w, h), o));
    // ROI time courses (% of their first value, so that several share one axis).
    std::vector<Series> rois;
    for (size_t r = 0; r < data_.roi_names.size(); ++r) {
      Series s{data_.roi_names[r], {}, {}, kMotionColours[r % kMotionColours.size()], 1.5f};
      double base = kNaN;
      for (const TrSample& t : data_.history) {
        const double v = r < t.rois.size() ? t.rois[r] : kNaN;
        if (!std::isfinite(base) && std::isfinite(v) && v != 0) base = v;
        s.x.push_back(static_cast<double>(t.volume));
        s.y.push_back(std::isfinite(base) ? 100.0 * (v / base - 1.0) : kNaN);
      }
      rois.push_back(std::move(s));
    }
    layout_.add("plot:rois", line_plot("##rois", rois, ImVec2(w, h), o));
    const double last = data_.history.empty() ? kNaN : data_.history.back().feedback;
    if (std::isfinite(last)) {
      ImGui::Text("feedback %+.3f   (ROI signal below: %% of its first volume)", last);
    } else {
      ImGui::TextUnformatted("feedback n/a   (ROI signal below: % of its first volume)");
    }
  }
  ImGui::End();
}

void App::connectivity_panel(ImVec2 pos, ImVec2 size) {
  if (begin_panel("Connectivity", pos, size)) {
    int row = -1, column = -1;
    const float side = std::min(ImGui::GetContentRegionAvail().x, ImGui::GetContentRegionAvail().y - 20);
    layout_.add("matrix:connectivity", heat_map("##matrix", data_.connectivity, static_cast<int>(data_.regions_count),
                                                ImVec2(side, side), row, column));
    if (row >= 0) {
      const auto name = [&](int i) {
        return static_cast<size_t>(i) < data_.regions.size() ? data_.regions[static_cast<size_t>(i)]
                                                             : "region " + std::to_string(i + 1);
      };
      ImGui::BeginTooltip();
      ImGui::Text("%s - %s: r = %.3f", name(row).c_str(), name(column).c_str(),
                  data_.connectivity[static_cast<size_t>(row) * static_cast<size_t>(data_.regions_count) +
                                     static_cast<size_t>(column)]);
      ImGui::EndTooltip();
    }
    ImGui::Text("%lld regions, sliding-window r (blue -1, white 0, red +1)",
                static_cast<long long>(data_.regions_count));
  }
  ImGui::End();
}

void App::latency_panel(ImVec2 pos, ImVec2 size) {
  if (begin_panel("Latency", pos, size)) {
    static const std::vector<ImU32> kStageColours{IM_COL32(120, 120, 120, 255), IM_COL32(90, 140, 255, 255),
                                                  IM_COL32(240, 80, 80, 255),   IM_COL32(80, 220, 80, 255),
                                                  IM_COL32(240, 160, 60, 255),  IM_COL32(200, 90, 230, 255),
                                                  IM_COL32(250, 250, 250, 255)};
    std::vector<std::vector<double>> bars;
    std::vector<double> end_to_end;
    const size_t first = data_.history.size() > 200 ? data_.history.size() - 200 : 0;
    for (size_t i = first; i < data_.history.size(); ++i) {
      const auto& l = data_.history[i].latency_ms;
      std::vector<double> segments;
      double previous = 0.0;
      for (double v : l) {
        if (!std::isfinite(v)) {
          segments.push_back(0.0);
          continue;
        }
        segments.push_back(v - previous);
        previous = v;
      }
      bars.push_back(std::move(segments));
      if (!l.empty()) end_to_end.push_back(l.back());
    }
    const float w = ImGui::GetContentRegionAvail().x, h = ImGui::GetContentRegionAvail().y - 26;
    layout_.add("plot:latency_bars", stacked_bars("##bars", bars, kStageColours, ImVec2(w * 0.62f, h)));
    ImGui::SameLine();
    std::vector<double> all;
    for (const TrSample& t : data_.history) {
      if (!t.latency_ms.empty()) all.push_back(t.latency_ms.back());
    }
    layout_.add("plot:latency_histogram",
                histogram("##hist", all, 30, ImVec2(w * 0.38f - 8, h), IM_COL32(250, 250, 250, 255)));
    const auto& names = latency_step_names();
    for (size_t k = 0; k < names.size(); ++k) {
      ImGui::ColorButton(names[k].c_str(), ImGui::ColorConvertU32ToFloat4(kStageColours[k]),
                         ImGuiColorEditFlags_NoTooltip, ImVec2(10, 10));
      ImGui::SameLine();
      ImGui::TextUnformatted(names[k] == "end_to_end" ? "sent" : names[k].c_str());
      ImGui::SameLine();
    }
    ImGui::NewLine();
  }
  ImGui::End();
}

void App::status_panel(ImVec2 pos, ImVec2 size) {
  if (begin_panel("Status", pos, size)) {
    ImGui::TextWrapped("device: %s", data_.device.empty() ? "(not reported)" : data_.device.c_str());
    if (options_.connection_status) ImGui::TextWrapped("%s", options_.connection_status().c_str());
    auto counter = [](const char* name, int64_t v) {
      if (v >= 0) {
        ImGui::Text("%s %lld", name, static_cast<long long>(v));
      } else {
        ImGui::Text("%s -", name);
      }
    };
    const float column = ImGui::GetContentRegionAvail().x / 3;
    counter("received", data_.received);
    ImGui::SameLine(column);
    counter("analysed", data_.analysed);
    ImGui::SameLine(2 * column);
    counter("skipped", data_.skipped);
    counter("missing", data_.missing);
    ImGui::SameLine(column);
    counter("duplicated", data_.duplicates);
    ImGui::SameLine(2 * column);
    counter("dropped", data_.dropped);
    if (!data_.roi_status.empty() || !data_.roi_label_names.empty()) {
      std::string names;
      for (size_t k = 0; k < data_.roi_label_names.size(); ++k) names += (k ? ", " : "") + data_.roi_label_names[k];
      ImGui::Text("ROIs %s%s%s", data_.roi_status.empty() ? "ready" : data_.roi_status.c_str(),
                  names.empty() ? "" : ": ", names.c_str());
    }
    ImGui::Text("TRs shown %zu   messages lost %lld   restarts %lld", data_.history.size(),
                static_cast<long long>(data_.seq_gaps), static_cast<long long>(data_.restarts));
    if (!data_.history.empty()) {
      const auto& l = data_.history.back().latency_ms;
      const double e2e = l.empty() ? kNaN : l.back();
      ImGui::Text("volume %lld   end to end %.2f ms", static_cast<long long>(data_.history.back().volume), e2e);
    }
  }
  ImGui::End();
}

void App::qa_panel(ImVec2 pos, ImVec2 size) {
  if (begin_panel("QA", pos, size)) qa_panel_.draw(data_, layout_);
  ImGui::End();
}

void App::frame(int width, int height) {
  refresh();
  layout_.rects.clear();
  // Three columns: slices above connectivity, latency and status; motion above feedback; QA.
  const auto fw = static_cast<float>(width), fh = static_cast<float>(height);
  const float left = fw * 0.42f, middle = fw * 0.71f, top = fh * 0.56f, matrix = fw * 0.18f;
  slices_panel(ImVec2(0, 0), ImVec2(left, top));
  connectivity_panel(ImVec2(0, top), ImVec2(matrix, fh - top));
  const float status_height = 10 * ImGui::GetTextLineHeightWithSpacing() + 12;
  latency_panel(ImVec2(matrix, top), ImVec2(left - matrix, fh - top - status_height));
  status_panel(ImVec2(matrix, fh - status_height), ImVec2(left - matrix, status_height));
  motion_panel(ImVec2(left, 0), ImVec2(middle - left, fh * 0.5f));
  feedback_panel(ImVec2(left, fh * 0.5f), ImVec2(middle - left, fh * 0.5f));
  qa_panel(ImVec2(middle, 0), ImVec2(fw - middle, fh));
}

// Per-frame work time (events, panels, slice images, GL drawing; not the wait for the next event).
struct FrameTimes {
  std::vector<double> ms;
  nlohmann::json summary() const {
    if (ms.empty()) return nlohmann::json::object();
    std::vector<double> v = ms;
    std::sort(v.begin(), v.end());
    auto q = [&](double p) { return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))]; };
    const auto slow = std::count_if(v.begin(), v.end(), [](double x) { return x > 50.0; });
    return {{"frames", v.size()}, {"p50_ms", q(0.5)}, {"p99_ms", q(0.99)}, {"max_ms", v.back()}, {"over_50_ms", slow}};
  }
};

// A number for the layout's JSON: null when not known.
nlohmann::json finite_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

void write_layout(const std::filesystem::path& path, const Layout& layout, int width, int height,
                  const ViewerData& data, const FrameTimes& frames, int64_t outline_pixels) {
  nlohmann::json j{{"width", width},
                   {"height", height},
                   {"trs", data.history.size()},
                   {"device", data.device},
                   {"received", data.received},
                   {"analysed", data.analysed},
                   {"run", data.run},
                   {"regions", data.regions_count},
                   {"roi_labels", data.roi_label_names},
                   {"roi_status", data.roi_status},
                   {"roi_outline_pixels", outline_pixels},
                   {"qa",
                    {{"seen", data.qa.seen},
                     {"on", data.qa.on},
                     {"samples", data.qa.samples.size()},
                     {"carpet_columns", data.qa.carpet.columns()},
                     {"carpet_rows", data.qa.carpet.rows()},
                     {"tsnr_map", !data.qa.tsnr.empty()},
                     {"cnr_map", !data.qa.cnr.empty()},
                     {"tsnr_median", finite_or_null(data.qa.latest.tsnr_median)},
                     {"sliding_tsnr_median", finite_or_null(data.qa.latest.sliding_tsnr_median)},
                     {"cnr_p95", finite_or_null(data.qa.latest.cnr_p95)},
                     {"flagged_slices", data.qa.flagged.size()},
                     {"alarms", data.qa.alarms.size()}}}};
  nlohmann::json rects = nlohmann::json::object();
  for (const auto& [name, r] : layout.rects) rects[name] = {r.min.x, r.min.y, r.max.x - r.min.x, r.max.y - r.min.y};
  j["rects"] = rects;
  j["frame_work"] = frames.summary();
  std::ofstream(path) << j.dump(1) << "\n";
}

}  // namespace

int run_viewer(SharedViewerData& shared, ViewerOptions options) {
  glfwSetErrorCallback([](int code, const char* text) { spdlog::error("GLFW error {}: {}", code, text); });
  if (glfwInit() == GLFW_FALSE) {
    spdlog::error("cannot initialise GLFW (no display? run under Xvfb for --snapshot: xvfb-run rtfmri-view ...)");
    return 1;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  GLFWwindow* window = glfwCreateWindow(options.width, options.height, options.title.c_str(), nullptr, nullptr);
  if (window == nullptr) {
    spdlog::error("cannot open an OpenGL 3.3 window");
    glfwTerminate();
    return 1;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(1);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330");
  int status = 0;
  {
    App app(shared, options);
    const auto start = std::chrono::steady_clock::now();
    int frames_after_ready = 0;
    FrameTimes frame_times;
    while (glfwWindowShouldClose(window) == GLFW_FALSE) {
      glfwWaitEventsTimeout(1.0 / 60.0);
      const auto frame_start = std::chrono::steady_clock::now();
      ImGui_ImplOpenGL3_NewFrame();
      ImGui_ImplGlfw_NewFrame();
      ImGui::NewFrame();
      int width = 0, height = 0;
      glfwGetFramebufferSize(window, &width, &height);
      app.frame(width, height);
      ImGui::Render();
      glViewport(0, 0, width, height);
      glClearColor(0.08f, 0.08f, 0.09f, 1.0f);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
      if (!options.snapshot.empty()) {
        if (app.shown_trs() >= options.after) ++frames_after_ready;
        if (frames_after_ready >= 3) {  // a few frames, so that textures and layout have settled
          std::vector<uint8_t> pixels(static_cast<size_t>(width) * static_cast<size_t>(height) * 4);
          glPixelStorei(GL_PACK_ALIGNMENT, 1);
          glReadBuffer(GL_BACK);
          glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
          std::vector<uint8_t> flipped(pixels.size());
          const size_t row = static_cast<size_t>(width) * 4;
          for (int y = 0; y < height; ++y) {
            std::copy_n(pixels.data() + static_cast<size_t>(height - 1 - y) * row, row,
                        flipped.data() + static_cast<size_t>(y) * row);
          }
          try {
            write_png(options.snapshot, width, height, flipped);
            std::filesystem::path layout_path = options.snapshot;
            layout_path += ".json";
            write_layout(layout_path, app.layout(), width, height, app.data(), frame_times, app.outline_pixels());
            spdlog::info("snapshot after {} TRs: {} ({}x{}), layout {}; frame work {}", app.shown_trs(),
                         options.snapshot.string(), width, height, layout_path.string(), frame_times.summary().dump());
          } catch (const std::exception& e) {
            spdlog::error("{}", e.what());
            status = 1;
          }
          break;
        }
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (waited > options.timeout_s) {
          spdlog::error("snapshot: only {} of {} TRs arrived within {} s", app.shown_trs(), options.after,
                        options.timeout_s);
          status = 1;
          break;
        }
      }
      glfwSwapBuffers(window);
      frame_times.ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - frame_start).count());
    }
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return status;
}

}  // namespace rtf::viewer
