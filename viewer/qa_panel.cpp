// QaPanel::draw: the QA panel's parts, top to bottom: status lines, the tSNR and (with a design) CNR mosaics with
// their colour scales, the carpet, six traces (two columns), the usable tally and the alarm list.
#include "viewer/qa_panel.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "viewer/qa_images.hpp"

namespace rtf::viewer {

namespace {

constexpr int64_t kCarpetMaxRows = 512;
constexpr ImU32 kAlarmRed = IM_COL32(255, 80, 80, 255);
constexpr ImU32 kFlagged = IM_COL32(255, 150, 40, 255);

std::string number(const char* spec, double value) {
  if (!std::isfinite(value)) return "n/a";
  char text[48];
  std::snprintf(text, sizeof text, spec, value);
  return text;
}

}  // namespace

void QaPanel::rebuild(const ViewerData& data) {
  const QaState& qa = data.qa;
  // The tSNR map in hot colours from 0 to its robust maximum; the CNR map (signed) hot above 0 and cool below,
  // saturating at its robust maximum of |CNR|.
  auto build = [&](MapTexture& map, const std::vector<float>& values, uint64_t version, bool is_signed) {
    if (map.restarts == data.restarts && map.version == version) return;
    map.restarts = data.restarts;
    map.version = version;
    if (static_cast<int64_t>(values.size()) != data.voxels()) return;
    map.maximum = is_signed ? robust_abs_max(values) : robust_range(values).second;
    const auto window = robust_range(data.volume);
    OverlaySettings overlay;
    overlay.threshold = std::numeric_limits<float>::min();  // 0 (and, for tSNR, below: outside the mask): the underlay
    overlay.maximum = std::max(map.maximum, 1e-3f);
    overlay.negative = is_signed;
    overlay.min_underlay = 0.15f * window.second;  // no colour over the background
    map.texture.upload(axial_mosaic(data.volume, values, data.dims, data.voxel_mm(), window, overlay));
  };
  build(tsnr_, qa.tsnr, qa.tsnr_version, false);
  build(cnr_, qa.cnr, qa.cnr_version, true);
  if (carpet_restarts_ != data.restarts || carpet_version_ != qa.carpet.version()) {
    carpet_restarts_ = data.restarts;
    carpet_version_ = qa.carpet.version();
    const SliceImage image = carpet_image(qa.carpet, kCarpetMaxRows);
    if (image.width > 0) carpet_texture_.upload(image);
    carpet_split_row_ = carpet_split_row(qa.carpet, kCarpetMaxRows);
  }
}

void QaPanel::maps(const ViewerData& data, float height, Layout& layout) {
  const QaState& qa = data.qa;
  const bool has_cnr = !qa.cnr.empty();
  if (has_cnr) {  // a design: the CNR map comes with the tSNR map
    int choice = static_cast<int>(choice_);
    ImGui::RadioButton("tSNR", &choice, static_cast<int>(MapChoice::kTsnr));
    ImGui::SameLine();
    ImGui::RadioButton("CNR", &choice, static_cast<int>(MapChoice::kCnr));
    ImGui::SameLine();
    ImGui::RadioButton("both", &choice, static_cast<int>(MapChoice::kBoth));
    choice_ = static_cast<MapChoice>(choice);
    ImGui::SameLine();
    ImGui::Text("  CNR of %s: p95 %s (volume %lld)", data.contrast.empty() ? "the contrast" : data.contrast.c_str(),
                number("%.2f", qa.latest.cnr_p95).c_str(), static_cast<long long>(qa.cnr_volume));
    height -= ImGui::GetFrameHeightWithSpacing();
  }
  const bool show_tsnr = !has_cnr || choice_ != MapChoice::kCnr, show_cnr = has_cnr && choice_ != MapChoice::kTsnr;
  const float available = ImGui::GetContentRegionAvail().x;
  const float width = show_tsnr && show_cnr ? (available - ImGui::GetStyle().ItemSpacing.x) / 2 : available;
  if (show_tsnr) mosaic(data, tsnr_, qa.tsnr, "tsnr", width, height, layout);
  if (show_tsnr && show_cnr) ImGui::SameLine();
  if (show_cnr) mosaic(data, cnr_, qa.cnr, "cnr", width, height, layout);
}

void QaPanel::mosaic(const ViewerData& data, MapTexture& map, std::span<const float> values, const char* kind,
                     float width, float height, Layout& layout) {
  const QaState& qa = data.qa;
  const std::string name = kind;
  const bool is_cnr = name == "cnr";
  const char* label = is_cnr ? "CNR" : "tSNR";
  const Texture& t = map.texture;
  const float image_width = width - 70;  // the colour scale's 60 pixels and a gap
  ImGui::BeginGroup();
  if (values.empty() || static_cast<int64_t>(values.size()) != data.voxels() || t.id == 0) {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::Dummy(ImVec2(width, height));
    ImGui::GetWindowDrawList()->AddText(ImVec2(p.x + 6, p.y + 4), IM_COL32(200, 200, 200, 255),
                                        (std::string(label) + " map: not received yet").c_str());
    ImGui::EndGroup();
    return;
  }
  // As large as fits, keeping the voxels' aspect.
  const float aspect = static_cast<float>(t.width) / (static_cast<float>(t.height) * static_cast<float>(t.aspect));
  const float w = std::max(std::min(image_width, height * aspect), 1.0f), h = w / aspect;
  ImGui::Image(t.imgui_id(), ImVec2(w, h));
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  layout.add("qa:" + name, {a, b});
  const MosaicLayout m = mosaic_layout(data.dims);
  const float sx = (b.x - a.x) / static_cast<float>(t.width);
  const float sy = (b.y - a.y) / static_cast<float>(t.height);
  ImDrawList* d = ImGui::GetWindowDrawList();
  for (int64_t z : qa.flagged_now) {  // the newest volume's flagged slices
    if (z < 0 || z >= data.dims[2]) continue;
    const auto [x0, y0] = mosaic_tile(m, z);
    d->AddRect(
        ImVec2(a.x + sx * static_cast<float>(x0), a.y + sy * static_cast<float>(y0)),
        ImVec2(a.x + sx * static_cast<float>(x0 + m.tile_width), a.y + sy * static_cast<float>(y0 + m.tile_height)),
        z == qa.worst_slice ? kAlarmRed : kFlagged, 0.0f, 0, 2.0f);
  }
  if (ImGui::IsItemHovered()) {
    const ImVec2 mouse = ImGui::GetMousePos();
    const auto px = static_cast<int64_t>((mouse.x - a.x) / sx), py = static_cast<int64_t>((mouse.y - a.y) / sy);
    const int64_t z = (py / m.tile_height) * m.columns + px / m.tile_width;
    if (px >= 0 && py >= 0 && z >= 0 && z < data.dims[2]) {
      const int64_t x = px % m.tile_width, y = data.dims[1] - 1 - py % m.tile_height;
      const float v = values[static_cast<size_t>(x + data.dims[0] * (y + data.dims[1] * z))];
      ImGui::SetTooltip(
          is_cnr ? "slice %lld, voxel (%lld, %lld): CNR %.2f" : "slice %lld, voxel (%lld, %lld): tSNR %.1f",
          static_cast<long long>(z), static_cast<long long>(x), static_cast<long long>(y), v);
    }
  }
  ImGui::SameLine();
  const std::string scale_id = "##" + name + "_scale";
  const ImVec2 scale_size(60, std::max(h, 60.0f));
  layout.add("qa:" + name + "_scale", is_cnr ? signed_scale(scale_id.c_str(), map.maximum, scale_size)
                                             : colour_scale(scale_id.c_str(), 0.0f, map.maximum, scale_size));
  ImGui::EndGroup();
}

void QaPanel::carpet(const ViewerData& data, float height, Layout& layout) {
  const QaCarpet& c = data.qa.carpet;
  const float width = ImGui::GetContentRegionAvail().x;
  const ImVec2 a = ImGui::GetCursorScreenPos(), b(a.x + width, a.y + height);
  ImGui::InvisibleButton("##carpet", ImVec2(width, height));
  layout.add("qa:carpet", {a, b});
  ImDrawList* d = ImGui::GetWindowDrawList();
  if (c.columns() == 0 || carpet_texture_.id == 0) {
    d->AddRectFilled(a, b, IM_COL32(20, 20, 24, 255));
    d->AddText(ImVec2(a.x + 6, a.y + 4), IM_COL32(200, 200, 200, 255), "carpet: no column yet");
    return;
  }
  d->AddImage(carpet_texture_.imgui_id(), a, b);
  if (carpet_split_row_ > 0) {
    const float y = a.y + height * static_cast<float>(carpet_split_row_) / static_cast<float>(carpet_texture_.height);
    d->AddLine(ImVec2(a.x, y), ImVec2(b.x, y), IM_COL32(255, 210, 60, 255), 2.0f);
    d->AddText(ImVec2(a.x + 4, y - 16), IM_COL32(255, 210, 60, 255), "GM");
  }
  if (ImGui::IsItemHovered()) {
    const auto k = static_cast<size_t>(std::clamp((ImGui::GetMousePos().x - a.x) / width, 0.0f, 0.999f) *
                                       static_cast<float>(c.columns()));
    ImGui::SetTooltip("volume %lld", static_cast<long long>(c.column_volume(k)));
  }
}

void QaPanel::traces(const ViewerData& data, float height, Layout& layout) {
  const QaState& qa = data.qa;
  struct Trace {
    const char* id;
    const char* label;
    double QaSample::*field;
    double threshold;
    ImU32 colour;
    const char* second_label = nullptr;  // a second series in the same plot (shown once it has a value)
    double QaSample::*second = nullptr;
    ImU32 second_colour = 0;
  };
  const Trace traces[] = {
      {"plot:qa_fd", "FD mm (filtered)", &QaSample::fd_mm, qa.thresholds.fd_mm, IM_COL32(250, 250, 250, 255)},
      {"plot:qa_dvars", "DVARS", &QaSample::dvars, kNaN, IM_COL32(90, 140, 255, 255)},
      {"plot:qa_outliers", "outlier fraction", &QaSample::outlier_fraction, qa.thresholds.outlier_fraction,
       IM_COL32(240, 160, 60, 255)},
      {"plot:qa_global", "global signal", &QaSample::global_signal, kNaN, IM_COL32(80, 220, 80, 255)},
      {"plot:qa_quality", "quality index", &QaSample::quality_index, kNaN, IM_COL32(200, 90, 230, 255)},
      {"plot:qa_tsnr", "tSNR median", &QaSample::tsnr_median, qa.thresholds.tsnr_min, IM_COL32(60, 210, 210, 255),
       "sliding", &QaSample::sliding_tsnr_median, IM_COL32(240, 120, 200, 255)},
  };
  PlotOptions o;
  if (!qa.samples.empty()) {
    o.x_min = static_cast<double>(qa.samples.front().volume);
    o.x_max = static_cast<double>(qa.samples.back().volume);
  }
  for (const QaFlaggedSlice& f : qa.flagged) {
    if (o.x_markers.empty() || o.x_markers.back() != static_cast<double>(f.volume)) {
      o.x_markers.push_back(static_cast<double>(f.volume));
    }
  }
  const float w = (ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ItemSpacing.x) / 2;
  const float h = (height - 2 * ImGui::GetStyle().ItemSpacing.y) / 3;
  for (size_t k = 0; k < std::size(traces); ++k) {
    const Trace& t = traces[k];
    std::vector<Series> series{{t.label, {}, {}, t.colour, 1.5f}};
    if (t.second != nullptr && std::any_of(qa.samples.begin(), qa.samples.end(),
                                           [&](const QaSample& q) { return std::isfinite(q.*t.second); })) {
      series.push_back({t.second_label, {}, {}, t.second_colour, 1.5f});
    }
    for (const QaSample& q : qa.samples) {
      series[0].x.push_back(static_cast<double>(q.volume));
      series[0].y.push_back(q.*(t.field));
      if (series.size() > 1) {
        series[1].x.push_back(static_cast<double>(q.volume));
        series[1].y.push_back(q.*(t.second));
      }
    }
    PlotOptions to = o;
    if (std::isfinite(t.threshold)) to.horizontal_lines = {t.threshold};
    layout.add(t.id, line_plot(t.id, series, ImVec2(w, h), to));
    if (k % 2 == 0) ImGui::SameLine();
  }
}

void QaPanel::draw(const ViewerData& data, Layout& layout) {
  const QaState& qa = data.qa;
  if (!qa.seen) {
    ImGui::TextWrapped("QA off: the server sends no QA values (QA stage off, or a server without it).");
    return;
  }
  rebuild(data);
  const QaSample& s = qa.latest;
  if (!qa.on) {
    ImGui::TextColored(ImVec4(1.0f, 0.6f, 0.2f, 1.0f), "QA off in the newest message (values of volume %lld)",
                       static_cast<long long>(s.volume));
  } else {
    // The sliding window's median beside the cumulative one (the server sends it with a GLM). Three short lines,
    // wrapped where the panel is narrower still.
    const std::string window =
        std::isfinite(s.sliding_tsnr_median) ? " (sliding " + number("%.1f", s.sliding_tsnr_median) + ")" : "";
    ImGui::TextWrapped("volume %lld   tSNR median %s%s", static_cast<long long>(s.volume),
                       number("%.1f", s.tsnr_median).c_str(), window.c_str());
    ImGui::TextWrapped("worst slice %s (z %s)   FD %s mm   outliers %s",
                       qa.worst_slice >= 0 ? std::to_string(qa.worst_slice).c_str() : "-",
                       number("%.1f", s.slice_z_worst).c_str(), number("%.2f", s.fd_mm).c_str(),
                       number("%.3f", s.outlier_fraction).c_str());
    ImGui::TextWrapped("quality %s   DVARS %s", number("%.3f", s.quality_index).c_str(),
                       number("%.1f", s.dvars).c_str());
  }
  const float total = ImGui::GetContentRegionAvail().y;
  maps(data, total * 0.28f, layout);
  ImGui::Text("carpet: %zu volumes x %lld voxels, +-2 SD%s", qa.carpet.columns(),
              static_cast<long long>(qa.carpet.rows()), qa.carpet.split() > 0 ? ", GM above the line" : "");
  carpet(data, total * 0.15f, layout);
  traces(data, total * 0.30f, layout);
  if (!qa.flagged.empty()) {
    const QaFlaggedSlice& f = qa.flagged.back();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kFlagged),
                       "%zu flagged slices (orange lines); last: volume %lld slice %lld%s", qa.flagged.size(),
                       static_cast<long long>(f.volume), static_cast<long long>(f.slice),
                       std::isfinite(f.z) ? (" z " + number("%.1f", f.z)).c_str() : "");
  }
  for (const QaUsable& row : qa.usable) ImGui::TextUnformatted(usable_line(row, qa.target_minutes).c_str());
  const ImVec2 a = ImGui::GetCursorScreenPos();
  const ImVec2 size(ImGui::GetContentRegionAvail().x, std::max(ImGui::GetContentRegionAvail().y, 40.0f));
  if (ImGui::BeginChild("##qa_alarms", size, true)) {
    if (qa.alarms.empty()) {
      ImGui::TextUnformatted("no alarms");
    } else {
      ImGui::Text("alarms, newest first (%lld in this run):", static_cast<long long>(qa.alarms_seen));
      for (const QaAlarm& alarm : qa.alarms) {
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kAlarmRed), "%s", alarm_line(alarm).c_str());
      }
    }
  }
  ImGui::EndChild();
  layout.add("qa:alarms", {a, ImVec2(a.x + size.x, a.y + size.y)});
}

}  // namespace rtf::viewer
