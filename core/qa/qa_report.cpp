// qa_report_html: the page written section by section into one string; the pictures come from qa_plots.hpp, are
// encoded as PNG in memory and embedded as base64 data: URIs, so the file stands alone (no script, no external link).
#include "core/qa/qa_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include "core/io/base64.hpp"
#include "core/io/png_encode.hpp"
#include "core/qa/qa_plots.hpp"

namespace rtf {

namespace {

constexpr std::string_view kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; max-width: 1100px;
       margin: 24px auto; padding: 0 16px; line-height: 1.4; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; border-bottom: 1px solid #ddd; margin-top: 1.6em; padding-bottom: 2px; }
.summary { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.92em; }
th, td { border: 1px solid #ddd; padding: 3px 10px; text-align: left; vertical-align: top; }
thead th { background: #f3f3f3; }
tbody th { font-weight: 600; background: #fafafa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.none { color: #666; font-style: italic; }
figure { margin: 1em 0 1.4em 0; }
figcaption { font-size: 0.9em; margin-bottom: 0.3em; }
img.carpet { display: block; width: 100%; height: 360px; image-rendering: pixelated; border: 1px solid #ccc; }
img.mosaic { display: block; max-width: 100%; image-rendering: pixelated; }
.plot { display: grid; grid-template-columns: auto auto; justify-content: start; column-gap: 4px; }
.plot img { display: block; border: 1px solid #ccc; }
.yaxis { display: flex; flex-direction: column; justify-content: space-between; text-align: right;
         font-size: 11px; color: #555; }
.xaxis { grid-column: 2; display: flex; justify-content: space-between; font-size: 11px; color: #555; }
.bar { display: flex; align-items: center; gap: 6px; font-size: 11px; color: #555; margin-top: 6px; }
.bar img { width: 256px; height: 12px; }
footer { margin-top: 2em; font-size: 0.85em; color: #777; }
)";

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// NaN as "n/a"; `digits` significant digits.
std::string number(double v, int digits = 5) {
  if (std::isnan(v)) return "n/a";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.{}g}", v, digits);
}

std::string png_uri(const RgbImage& img) {
  const std::vector<uint8_t> png = encode_png(img.width, img.height, img.rgb, PngPixels::kRgb);
  return "data:image/png;base64," + base64_encode(png);
}

void check_sizes(const QaReportInput& in) {
  if (in.volumes < 0 || in.carpet_rows < 0 || in.carpet_split < 0 || in.carpet_split > in.carpet_rows) {
    throw std::invalid_argument("qa_report_html: negative volumes or carpet rows, or a split beyond the rows");
  }
  if (in.carpet.size() != static_cast<size_t>(in.carpet_rows * in.volumes) &&
      !(in.carpet.empty() && in.carpet_rows == 0)) {
    throw std::invalid_argument(fmt::format("qa_report_html: the carpet holds {} values, not {} rows x {} volumes",
                                            in.carpet.size(), in.carpet_rows, in.volumes));
  }
  if (!in.tsnr.empty()) {
    const auto [nx, ny, nz] = in.dims;
    if (nx < 1 || ny < 1 || nz < 1 || in.tsnr.size() != static_cast<size_t>(nx * ny * nz) ||
        (!in.mask.empty() && in.mask.size() != in.tsnr.size())) {
      throw std::invalid_argument(
          fmt::format("qa_report_html: a tSNR map of {} values or a mask of {} on a {}x{}x{} grid", in.tsnr.size(),
                      in.mask.size(), nx, ny, nz));
    }
  }
}

void head(std::string& out, const QaReportInput& in, const std::string& title) {
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"generator\" content=\"rtfmri\">\n";
  out += fmt::format("<title>Data quality: {}</title>\n<style>{}</style>\n</head>\n<body>\n", title, kStyle);
  out += fmt::format("<h1>Data quality: {}</h1>\n<p class=\"summary\">{} volume{}", title, in.volumes,
                     in.volumes == 1 ? "" : "s");
  if (in.tr_s > 0) {
    out += fmt::format(" &middot; TR {} s &middot; {} min", number(in.tr_s),
                       number(static_cast<double>(in.volumes) * in.tr_s / 60, 3));
  }
  out += fmt::format(" &middot; {} flagged slice{}</p>\n", in.flagged.size(), in.flagged.size() == 1 ? "" : "s");
}

void notes_table(std::string& out, const QaReportInput& in) {
  out += "<h2 id=\"run\">Run</h2>\n<table class=\"notes\"><tbody>\n";
  out += fmt::format("<tr><th>volumes</th><td>{}</td></tr>\n", in.volumes);
  out += fmt::format("<tr><th>TR</th><td>{}</td></tr>\n", in.tr_s > 0 ? number(in.tr_s) + " s" : "unknown");
  for (const auto& [label, text] : in.notes) {
    out += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", escape(label), escape(text));
  }
  out += "</tbody></table>\n";
}

void metrics_table(std::string& out, const QaReportInput& in) {
  out += "<h2 id=\"metrics\">Image-quality metrics</h2>\n";
  if (in.metrics.empty()) {
    out += "<p class=\"none\">none computed</p>\n";
    return;
  }
  out += "<table class=\"metrics\"><thead><tr><th>metric (MRIQC's name)</th><th>value</th></tr></thead><tbody>\n";
  for (const auto& [name, value] : in.metrics) {
    out += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td></tr>\n", escape(name), number(value));
  }
  out += "</tbody></table>\n";
}

void usable_table(std::string& out, const QaReportInput& in) {
  out += "<h2 id=\"usable\">Usable data</h2>\n";
  if (in.usable.empty()) {
    out += "<p class=\"none\">no tally (no motion estimates, so no FD)</p>\n";
    return;
  }
  out +=
      "<table class=\"usable\"><thead><tr><th>FD threshold (mm)</th><th>frames kept</th><th>minutes</th>"
      "<th>target (min)</th><th>minutes to target</th></tr></thead><tbody>\n";
  for (const QaUsableRow& row : in.usable) {
    std::string to_target;
    if (std::isnan(row.minutes_to_target)) {
      to_target = "n/a";
    } else if (std::isinf(row.minutes_to_target)) {
      to_target = "never (no frame kept)";
    } else if (row.minutes_to_target <= 0) {
      to_target = "reached";
    } else {
      to_target = fmt::format("{:.1f}", row.minutes_to_target);
    }
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.2f}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td></tr>\n",
        number(row.fd_threshold_mm, 3), row.frames, row.minutes, number(row.target_minutes, 4), to_target);
  }
  out += "</tbody></table>\n";
}

void flagged_table(std::string& out, const QaReportInput& in) {
  out += "<h2 id=\"flagged\">Flagged slices</h2>\n";
  if (in.flagged.empty()) {
    out += "<p class=\"none\">none</p>\n";
    return;
  }
  out +=
      "<table class=\"flagged\"><thead><tr><th>volume</th><th>slice</th><th>z</th><th>kind</th></tr></thead>"
      "<tbody>\n";
  for (const QaFlaggedSlice& f : in.flagged) {
    out +=
        fmt::format("<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
                    f.volume, f.slice, number(f.z, 4), f.z < 0 ? "drop-out" : "spike");
  }
  out += "</tbody></table>\n";
}

void carpet_section(std::string& out, const QaReportInput& in) {
  out += "<h2 id=\"carpet\">Carpet plot</h2>\n";
  if (in.volumes == 0) {
    out += "<p class=\"none\">no carpet plot: the run has no volume</p>\n";
    return;
  }
  if (in.carpet_rows == 0) {
    out += "<p class=\"none\">no carpet plot: no voxel series were given</p>\n";
    return;
  }
  const CarpetImage c = carpet_image(in.carpet, in.carpet_rows, in.volumes, in.carpet_split);
  std::string caption = fmt::format(
      "{} voxels (rows) &times; {} volume{} (columns), each row z-scored over time, grey "
      "from &minus;2 SD (black) to +2 SD (white) as in Power (2017).",
      in.carpet_rows, in.volumes, in.volumes == 1 ? "" : "s");
  if (c.split_pixel_row >= 0) {
    caption += fmt::format(" Above the orange line: grey matter ({} rows); below: the rest ({} rows).", in.carpet_split,
                           in.carpet_rows - in.carpet_split);
  }
  if (c.rows_per_pixel > 1 || c.volumes_per_pixel > 1) {
    caption += fmt::format(" Averaged over blocks of up to {} row{} &times; {} volume{}.", c.rows_per_pixel,
                           c.rows_per_pixel == 1 ? "" : "s", c.volumes_per_pixel, c.volumes_per_pixel == 1 ? "" : "s");
  }
  out += fmt::format("<figure><figcaption>{}</figcaption>\n<img class=\"carpet\" alt=\"carpet plot\" src=\"{}\">\n",
                     caption, png_uri(c.image));
  out +=
      fmt::format("<div class=\"xaxis\"><span>volume 0</span><span>volume {}</span></div></figure>\n", in.volumes - 1);
}

void trace_figure(std::string& out, const QaTrace& trace, double tr_s) {
  const std::string name = escape(trace.name);
  if (trace.values.empty()) {
    out += fmt::format("<p class=\"none\"><b>{}</b>: no values</p>\n", name);
    return;
  }
  const TracePlot plot = trace_plot(trace.values, trace.threshold);
  if (plot.image.width == 0) {
    out += fmt::format("<p class=\"none\"><b>{}</b>: no defined value (n/a at all {} volumes)</p>\n", name,
                       trace.values.size());
    return;
  }
  size_t lo = 0, hi = 0, undefined = 0, defined = 0;
  double sum = 0;
  for (size_t i = 0; i < trace.values.size(); ++i) {
    const double v = trace.values[i];
    if (!std::isfinite(v)) {
      ++undefined;
      continue;
    }
    if (defined == 0 || v < trace.values[lo]) lo = i;
    if (defined == 0 || v > trace.values[hi]) hi = i;
    sum += v;
    ++defined;
  }
  std::string caption =
      fmt::format("<b>{}</b>: min {} (volume {}), max {} (volume {}), mean {}", name, number(trace.values[lo]), lo,
                  number(trace.values[hi]), hi, number(sum / static_cast<double>(defined)));
  if (std::isfinite(trace.threshold)) caption += fmt::format("; threshold {} (dashed red)", number(trace.threshold));
  if (undefined > 0) caption += fmt::format("; n/a at {} volume{} (gaps)", undefined, undefined == 1 ? "" : "s");
  caption += fmt::format("; grid every {} and every {} volume{}", number(plot.y_step), plot.x_step,
                         plot.x_step == 1 ? "" : "s");
  const size_t n = trace.values.size();
  std::string x_label = "volume";
  if (tr_s > 0)
    x_label += fmt::format(" (TR {} s: 0&ndash;{} s)", number(tr_s), number(static_cast<double>(n - 1) * tr_s));
  out += fmt::format("<figure class=\"trace\"><figcaption>{}</figcaption>\n<div class=\"plot\">", caption);
  out += fmt::format("<div class=\"yaxis\"><span>{}</span><span>{}</span></div>", number(plot.y_max, 6),
                     number(plot.y_min, 6));
  out += fmt::format("<img alt=\"{} against volume\" src=\"{}\">", name, png_uri(plot.image));
  if (n > 1) {
    out += fmt::format("<div class=\"xaxis\"><span>0</span><span>{}</span><span>{}</span></div>", x_label, n - 1);
  } else {
    out += fmt::format("<div class=\"xaxis\"><span></span><span>{} 0</span><span></span></div>", x_label);
  }
  out += "</div></figure>\n";
}

void traces_section(std::string& out, const QaReportInput& in) {
  out += "<h2 id=\"traces\">Per-volume traces</h2>\n";
  if (in.traces.empty()) out += "<p class=\"none\">no traces</p>\n";
  for (const QaTrace& trace : in.traces) trace_figure(out, trace, in.tr_s);
}

void tsnr_section(std::string& out, const QaReportInput& in) {
  out += "<h2 id=\"tsnr\">tSNR</h2>\n";
  if (in.tsnr.empty()) {
    out += "<p class=\"none\">no tSNR map</p>\n";
    return;
  }
  const MosaicImage m = tsnr_mosaic(in.dims, in.tsnr, in.mask);
  std::string caption = fmt::format(
      "Voxel-wise tSNR (temporal mean / SD), axial slices z = 0&ndash;{} left to right, top to bottom (x to the right, "
      "y up, voxel axes); colour from 0 to {} (the 99th percentile inside the mask); outside the mask dark grey, "
      "undefined values inside it magenta.",
      in.dims[2] - 1, number(m.range_max, 4));
  if (m.slice_step > 1) caption += fmt::format(" Every {}th slice shown.", m.slice_step);
  if (m.in_plane_step > 1) caption += fmt::format(" Averaged over {0}&times;{0} voxels in plane.", m.in_plane_step);
  const int zoom = std::clamp(720 / m.image.width, 1, 4);
  out += fmt::format(
      "<figure><figcaption>{}</figcaption>\n<img class=\"mosaic\" alt=\"tSNR mosaic\" "
      "style=\"width:{}px\" src=\"{}\">\n",
      caption, m.image.width * zoom, png_uri(m.image));
  out += fmt::format(
      "<div class=\"bar\"><span>0</span><img alt=\"colour scale\" src=\"{}\"><span>{}</span></div>"
      "</figure>\n",
      png_uri(viridis_bar()), number(m.range_max, 4));
}

}  // namespace

std::string qa_report_html(const QaReportInput& input) {
  check_sizes(input);
  const std::string title = escape(input.title.empty() ? std::string("(untitled run)") : input.title);
  std::string out;
  head(out, input, title);
  notes_table(out, input);
  metrics_table(out, input);
  usable_table(out, input);
  flagged_table(out, input);
  carpet_section(out, input);
  traces_section(out, input);
  tsnr_section(out, input);
  out += "<footer>Written by rtfmri; the measures are described in docs/algorithms/qa.md.</footer>\n</body>\n</html>\n";
  return out;
}

}  // namespace rtf
